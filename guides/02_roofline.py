"""
Roofline (stub)
===============
"""

print("stub")
