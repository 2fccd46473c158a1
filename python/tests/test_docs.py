"""The examples in the public functions' docstrings run and print what they say (numpy, so no torch needed), and
every public function has type hints and a numpydoc docstring with an example."""
import doctest
import inspect

import pytest

import txops
from txops import _settings, gdr, rope, rotary

PUBLIC = [getattr(txops, name) for name in txops.__all__ if callable(getattr(txops, name))]


@pytest.mark.parametrize("module", [rope, rotary, gdr, _settings], ids=lambda m: m.__name__)
def test_docstring_examples(module):
    threads = txops.num_threads()
    try:
        failures, tried = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE, report=True)
    finally:
        txops.set_num_threads(0)
        txops.set_compat_mode("txops")
    assert tried > 0 and failures == 0
    assert txops.num_threads() == threads


@pytest.mark.parametrize("function", PUBLIC, ids=lambda f: f.__name__)
def test_public_function_documented_and_typed(function):
    doc = inspect.getdoc(function)
    assert doc and "Examples\n--------\n>>> " in doc, function.__name__
    assert "return" in inspect.get_annotations(function), function.__name__
    params = [p for p in inspect.signature(function).parameters.values()]
    assert all(p.annotation is not inspect.Parameter.empty for p in params), function.__name__
    if params:
        assert "Parameters\n----------\n" in doc, function.__name__
