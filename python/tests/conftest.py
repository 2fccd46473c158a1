"""pytest setup for the txops Python suite. It tests the txops that the interpreter imports — the installed package
(`make test` installs it into .venv/), or the source tree with PYTHONPATH=python — and puts the test helpers
(references.py) on the path. torch.compile's caches go under build-py/ in a source tree (fast second runs)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)  # references.py

if os.path.isdir(os.path.join(ROOT, ".git")):
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(ROOT, "build-py", "torchinductor"))
    os.environ.setdefault("TRITON_CACHE_DIR", os.path.join(ROOT, "build-py", "triton"))


def pytest_report_header(config):
    import txops
    where = os.path.dirname(os.path.abspath(txops.__file__))
    if os.environ.get("TXOPS_TEST_INSTALLED") == "1" and where == os.path.join(ROOT, "python", "txops"):
        raise RuntimeError(f"TXOPS_TEST_INSTALLED=1 but txops was imported from the source tree ({where})")
    return f"txops {txops.__version__} from {where}"
