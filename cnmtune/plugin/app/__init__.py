"""Unmodified UPMEM applications (C host on the SDK's dpu.h + DPU C, PrIM's layout): build, run, tune."""

from cnmtune.plugin.app.project import AppError, AppProject, AppRun, SetTimes, make_variables

__all__ = ["AppError", "AppProject", "AppRun", "SetTimes", "make_variables"]
