"""The built wheel works on its own: installed into a fresh venv, away from the checkout.

Builds the wheel, installs it (dependencies come from the package index pip is
configured with), then runs ``policyctl`` there and checks that the shipped
data (grammar, policies, hints) is found inside the installed package.
"""

from __future__ import annotations

import json
import subprocess
import sys
import venv
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def run(*args: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    result = subprocess.run([str(a) for a in args], capture_output=True, text=True, cwd=cwd, check=False,
                            timeout=900)
    assert result.returncode == 0, f"{args}\n{result.stdout}\n{result.stderr}"
    return result


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The ``bin`` folder of a fresh venv with the wheel installed."""
    root = tmp_path_factory.mktemp("wheel")
    run(sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", root / "dist", REPO, cwd=root)
    (wheel,) = (root / "dist").glob("policyctl-*.whl")
    venv.create(root / "venv", with_pip=True)
    bin_dir = root / "venv" / "bin"
    run(bin_dir / "python", "-m", "pip", "install", "--quiet", wheel, cwd=root)
    return bin_dir


def test_policyctl_lints_the_builtin_policy(installed: Path, tmp_path: Path) -> None:
    result = run(installed / "policyctl", "lint", "builtin:default", cwd=tmp_path)
    assert result.stdout == "1 file checked, no problems\n"


def test_every_shipped_policy_is_clean_when_installed(installed: Path, tmp_path: Path) -> None:
    result = run(installed / "policyctl", "lint", "--strict", "builtin:", cwd=tmp_path)
    assert result.stdout.endswith("checked, no problems\n")


def test_data_folders_come_from_inside_the_installed_package(installed: Path, tmp_path: Path) -> None:
    probe = (
        "import json, policy, policy.resources as r;"
        "names = ('grammar', 'policies', 'hints');"
        "print(json.dumps({'package': policy.__file__,"
        " 'folders': {n: str(r.data_dir(n)) for n in names},"
        " 'files': {n: sorted(p.name for p in r.data_dir(n).iterdir()) for n in names}}))"
    )
    found = json.loads(run(installed / "python", "-c", probe, cwd=tmp_path).stdout)
    package = Path(found["package"]).parent
    assert "site-packages" in package.parts
    for name, folder in found["folders"].items():
        assert Path(folder) == package / "_data" / name
    assert found["files"]["grammar"] == ["policy.lark"]
    assert "default.policy" in found["files"]["policies"]
    assert sorted(p.name for p in (REPO / "hints").glob("*.j2")) == [
        f for f in found["files"]["hints"] if f.endswith(".j2")
    ]


def test_python_m_cli_runs_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    result = run(installed / "python", "-m", "cli", "--version", cwd=tmp_path)
    assert result.stdout.startswith("policyctl ")
    assert "not installed" not in result.stdout
