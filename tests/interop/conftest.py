"""ckpt interop tier: drives the built binary ($CKPT_BIN, default target/release/ckpt) and
checks its outputs with real torch.  Nothing here may be skipped: a skip is reported as a
failure (a missing binary, a missing fixture or the wrong torch all FAIL)."""
import pytest


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    if rep.skipped and not hasattr(rep, "wasxfail"):
        rep.outcome = "failed"
        reason = rep.longrepr[2] if isinstance(rep.longrepr, tuple) else rep.longrepr
        rep.longrepr = f"skips are not allowed in tests/interop: {reason}"


def pytest_report_header(config):
    from test_onnx import long_run_report
    return long_run_report()


def pytest_terminal_summary(terminalreporter):
    from test_onnx import long_run_report
    terminalreporter.write_sep("=", long_run_report(), yellow=True, bold=True)
