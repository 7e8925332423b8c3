"""The CI switch of conftest.py can fail: a test that skips is a failure naming its reason
under CI=true or DLP_REQUIRE_ALL=1, and a plain skip otherwise."""

from pathlib import Path

import pytest

CONFTEST = (Path(__file__).parent / "conftest.py").read_text()
SKIPPER = '''
import pytest

def test_needs_a_tool():
    pytest.importorskip("no_such_module_dlp_test")
'''


@pytest.mark.parametrize("env,failed,skipped", [
    ({"CI": "true"}, 1, 0),
    ({"DLP_REQUIRE_ALL": "1"}, 1, 0),
    ({"CI": "false"}, 0, 1),
    ({}, 0, 1),
])
def test_a_skip_fails_in_ci(pytester, monkeypatch, env, failed, skipped):
    for k in ("CI", "DLP_REQUIRE_ALL"):
        monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_skipper=SKIPPER)
    result = pytester.runpytest_subprocess("-rs")
    result.assert_outcomes(failed=failed, skipped=skipped)
    text = result.stdout.str()
    assert "no_such_module_dlp_test" in text, text
    if failed:
        assert "may not pass by skipping" in text, text
