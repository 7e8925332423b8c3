"""The suite tests the installed wheel (`just test-python` installs it into a fresh virtual
environment), not the source tree: python/dlp_mcmc has no compiled extension, and importing
it would hide a file missing from the wheel."""

from pathlib import Path

import dlp_mcmc


def test_the_package_is_the_installed_one(root):
    here = Path(dlp_mcmc.__file__).resolve()
    assert root / "python" not in here.parents, here
    assert "site-packages" in here.parts, here
    # The stubs and the typing marker ship in the wheel.
    assert (here.parent / "_dlp.pyi").is_file() and (here.parent / "py.typed").is_file()
