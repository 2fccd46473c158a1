"""The Qwen3-Next example runs and matches its pure-PyTorch blocks (fp32 and bf16)."""
import os
import subprocess
import sys

import pytest

EXAMPLE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "qwen3_next_layer.py")


@pytest.mark.parametrize("dtype", ["fp32", "bf16"])
def test_qwen3_next_example(dtype):
    result = subprocess.run([sys.executable, EXAMPLE, "--dtype", dtype, "--decode-steps", "2"],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "all outputs match" in result.stdout
