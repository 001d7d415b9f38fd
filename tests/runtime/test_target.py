"""Run targets: chosen by name, the simulator through its target, a missing SDK before any work."""

from __future__ import annotations

import pytest

from cnmtune.errors import CnmtuneError, ToolchainMissing
from cnmtune.runtime.execute import run_binary
from cnmtune.runtime.sim.config import DpuConfig
from cnmtune.runtime.target import TARGETS, SampledSimTarget, SimTarget, make_target
from cnmtune.runtime.toolchain import Variant


def test_targets_by_name_and_what_they_say_about_themselves():
    sim = make_target("sim")
    assert isinstance(sim, SimTarget) and (sim.name, sim.counts, sim.exclusive) == ("sim", True, False)
    assert sim.config_hash == DpuConfig.calibrated().hash
    assert make_target("sim", sim_config="literature").config_hash == DpuConfig().hash
    assert sim.link_hash == DpuConfig.calibrated().link_hash
    sampled = make_target("sim-sampled")
    assert isinstance(sampled, SampledSimTarget) and sampled.config_hash == ""  # never recorded
    assert set(TARGETS) == {"sim", "sim-sampled", "upmem-sim", "upmem-hw"}


def test_the_config_hash_keys_kernel_time_and_the_link_hash_transfer_time():
    base = DpuConfig.calibrated()
    relinked = base.with_(xfer_call_s=2 * base.xfer_call_s, dpus_per_rank=32)
    assert relinked.hash == base.hash  # the same cycles and kernel seconds
    assert relinked.link_hash != base.link_hash and relinked.full_hash != base.full_hash
    for kernel_field in ("dma_engine_overhead", "frequency_hz", "launch_overhead_s"):
        retimed = base.with_(**{kernel_field: 2 * getattr(base, kernel_field)})
        assert retimed.hash != base.hash and retimed.link_hash == base.link_hash
        assert retimed.full_hash != base.full_hash


def test_an_unknown_target_or_config_is_refused_by_name():
    with pytest.raises(CnmtuneError, match="unknown device 'gpu'; choose sim, sim-sampled, upmem-sim or upmem-hw"):
        make_target("gpu")
    with pytest.raises(CnmtuneError, match="unknown simulator config 'fast'; valid: calibrated, literature"):
        make_target("sim", sim_config="fast")


def test_a_missing_sdk_is_reported_when_the_target_is_made(tmp_path, monkeypatch):
    monkeypatch.delenv("CNMTUNE_UPMEM_SDK", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    for name in ("upmem-sim", "upmem-hw"):
        with pytest.raises(ToolchainMissing, match="UPMEM SDK not found"):
            make_target(name, sdk_dir=tmp_path / "nowhere")


def test_the_simulator_target_runs_like_run_binary(va, toolchain):
    target = SimTarget()
    variant = Variant.of(va, "O2", 16)
    result = target.run(variant, 2, 4096)
    direct = run_binary(toolchain.compile(variant), 2, 4096)
    assert result.verified and result.device == "sim" and result.cycles > 0
    assert (result.kernel_s, result.cycles, result.slots) == (direct.kernel_s, direct.cycles, direct.slots)


def test_the_sampled_target_simulates_only_its_sample(va):
    full = SimTarget().run(Variant.of(va, "O2", 16), 4, 4096)
    sampled = SampledSimTarget(sampled=(0, 3)).run(Variant.of(va, "O2", 16), 4, 4096)
    assert full.verified and not sampled.verified  # unsampled DPUs return zeros
    assert sampled.device == "sim-sampled" and sampled.kernel_s == pytest.approx(full.kernel_s, rel=0.05)
