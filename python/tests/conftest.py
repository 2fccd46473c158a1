"""pytest setup for the txops Python suite: the package from python/ (the source tree, where CMake writes the
extension module) and the test helpers (references.py)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))  # python/ -> import txops
sys.path.insert(0, HERE)                   # references.py
