"""The iwf-python-sdk's own bundled integration tests, run unchanged against XDB.

Every test file of the SDK's suite (``iwf/tests/test_*.py``) is imported and its test
classes are published here under the file's name, so pytest runs all of them: several
files reuse a class name (``TestWorkflowErrors``, ``TestConditionalComplete``,
``TestRpcWithMemo``), which a star import would silently shadow.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import unittest

import iwf.tests

SDK_TEST_FILES = sorted(
    module.name
    for module in pkgutil.iter_modules(iwf.tests.__path__)
    if module.name.startswith("test_")
)

for _name in SDK_TEST_FILES:
    _module = importlib.import_module(f"iwf.tests.{_name}")
    for _class_name, _case in inspect.getmembers(_module, inspect.isclass):
        if issubclass(_case, unittest.TestCase) and _case.__module__ == _module.__name__:
            globals()[f"Test_{_name[5:]}__{_class_name}"] = _case
