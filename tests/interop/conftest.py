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
    if selects_test_onnx(config):
        from test_onnx import long_run_report
        return long_run_report()
    return None


def pytest_terminal_summary(terminalreporter):
    for reports in terminalreporter.stats.values():
        for report in reports:
            for key, value in getattr(report, "user_properties", ()):
                if key == "oracle_fuzz" and getattr(report, "when", "") == "call":
                    terminalreporter.write_line(f"test_oracle_fuzz: {value}")
    ran = any(getattr(report, "nodeid", "").split("::")[0].endswith("test_onnx.py")
              for reports in terminalreporter.stats.values() for report in reports)
    if ran:
        from test_onnx import long_run_report
        terminalreporter.write_sep("=", long_run_report(), yellow=True, bold=True)


def selects_test_onnx(config):
    """Whether the paths on the command line include test_onnx.py (a folder holding it, or
    the file itself): the header speaks of its architectures only then."""
    from pathlib import Path
    for arg in config.args or ["."]:
        path = Path(config.invocation_params.dir) / arg.split("::")[0]
        if path.is_dir() and (path / "test_onnx.py").exists() or path.name == "test_onnx.py":
            return True
    return False
