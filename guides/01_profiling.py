"""
Profiling (stub)
================
"""

print("stub")
