"""gpuperf: GPU performance engineering with PyTorch and Triton.

Importing the package does no work: the kernels live in :mod:`gpuperf.kernels`,
their PyTorch references in :mod:`gpuperf.reference` and the measurement code in
:mod:`gpuperf.bench`, each imported on demand.
"""

__version__ = "0.1.0"
