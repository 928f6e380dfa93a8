"""What a registry and a user's tools see: one version, read from pyproject.toml; a changelog entry for it."""

import re
from importlib import metadata
from pathlib import Path

import rotate
import rotate._version
import waveops

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = ROOT / "pyproject.toml"


def test_the_version_has_one_source():
    declared = rotate._version.pyproject_version(PYPROJECT)
    assert declared, "pyproject.toml's [project] table declares no static version"
    assert rotate.__version__ == waveops.__version__ == declared, (
        f"rotate {rotate.__version__}, waveops {waveops.__version__}, pyproject.toml {declared}: an editable "
        "install records the version when it is installed; run pip install -e . again after changing it")


def test_a_source_tree_never_installed_reads_its_pyproject(monkeypatch, tmp_path):
    def not_installed(name):
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(rotate._version.metadata, "version", not_installed)
    assert rotate._version.version() == rotate._version.pyproject_version(PYPROJECT)
    other = tmp_path / "pyproject.toml"
    other.write_text('[project]\nname = "something-else"\nversion = "9.9"\n')
    assert rotate._version.pyproject_version(other) is None
    assert rotate._version.pyproject_version(tmp_path / "missing.toml") is None
    monkeypatch.setattr(rotate._version, "pyproject_version", lambda path: None)
    assert rotate._version.version() == rotate._version.UNKNOWN


def test_no_module_writes_the_version_by_hand():
    by_hand = re.compile(r"""__version__\s*(:\s*str\s*)?=\s*["']""")
    for path in [*ROOT.glob("rotate/**/*.py"), *ROOT.glob("waveops/**/*.py")]:
        assert not by_hand.search(path.read_text()), f"{path.relative_to(ROOT)} writes __version__ by hand"


def test_the_changelog_has_an_entry_for_the_version():
    version = rotate._version.pyproject_version(PYPROJECT)
    assert re.search(rf"^## \[{re.escape(version)}\]", (ROOT / "CHANGELOG.md").read_text(), re.M), (
        f"CHANGELOG.md has no '## [{version}]' section: a release moves Unreleased there (CONTRIBUTING.md)")


def test_every_package_of_the_source_tree_is_in_the_distribution():
    """pyproject.toml lists the packages a wheel carries; a subpackage left out is missing from every
    install but an editable one (rotate._backends.cuda.schedules was, from 9dc3a0b: GPU rolls from a wheel failed)."""
    import tomllib

    listed = set(tomllib.loads(PYPROJECT.read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(init.parent.relative_to(ROOT).parts)
             for top in ("rotate", "waveops") for init in (ROOT / top).rglob("__init__.py")
             if "__pycache__" not in init.parts}
    assert found == listed, f"pyproject.toml [tool.setuptools] packages: add {sorted(found - listed)}, " \
                            f"remove {sorted(listed - found)}"
