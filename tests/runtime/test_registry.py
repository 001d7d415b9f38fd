"""Kernel registry (by name, by path, user kernel path) and workload parameters."""

import pytest

from cnmtune.errors import KernelError
from cnmtune.runtime.registry import find_kernel, list_kernels


def test_find_by_name_case_insensitive_and_by_path(va):
    assert find_kernel("VA").root == va.root
    assert find_kernel(va.root).name == "va"
    names = {k.name for k in list_kernels()}
    assert {"va", "red", "bs", "gemv"} <= names


def test_unknown_name_lists_the_registered_kernels():
    with pytest.raises(KernelError, match=r"no kernel named or at 'nope'; registered kernels: .*\bva\b"):
        find_kernel("nope")


def test_user_kernel_path(tmp_path, monkeypatch):
    (tmp_path / "mine" / "dpu").mkdir(parents=True)
    (tmp_path / "mine" / "dpu" / "task.c").write_text("int main(void) { return 0; }\n")
    monkeypatch.setenv("CNMTUNE_KERNEL_PATH", str(tmp_path))
    assert find_kernel("mine").root == tmp_path / "mine"


def test_workload_parameters():
    gemv = find_kernel("gemv").workload
    assert gemv.parse_param("n_cols=128") == ("n_cols", 128)
    assert gemv(16, 1, 16, n_cols=32).n_cols == 32
    with pytest.raises(KernelError, match="expects int"):
        gemv.parse_param("n_cols=wide")
    with pytest.raises(KernelError, match="bad parameter 'rows=3'; use NAME=VALUE with NAME one of: n_cols"):
        gemv.parse_param("rows=3")
    with pytest.raises(KernelError, match="unknown parameter 'rows'"):
        gemv(16, 1, 16, rows=3)


def test_expand_kernels_replaces_suites_by_their_kernels():
    from cnmtune.runtime.registry import expand_kernels

    expanded = expand_kernels(["va", "pim-ml", "prim"])
    assert expanded[:5] == ["va", "lirnq", "lirq", "lornq", "lorq"]
    assert len(expanded) == 20 and expanded.count("va") == 1  # va listed once, where first named
    assert expand_kernels(["gemv", "/some/dir"]) == ["gemv", "/some/dir"]
