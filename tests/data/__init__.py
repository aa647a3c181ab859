"""Tests of translator/data, a package so that its test_batching.py and tests/serve/test_batching.py
(each named after its wing's batching module) import as two modules."""
