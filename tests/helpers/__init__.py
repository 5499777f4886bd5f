"""Helpers several test suites share, imported as `helpers.<module>`: pytest puts tests/ on sys.path
for the rootdir conftest (tests/conftest.py, rootdir-based "prepend" imports), so every suite sees
this package without a path of its own."""
