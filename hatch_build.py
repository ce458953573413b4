"""Ship the start-up files in editable installs too: hatchling's force-include covers only regular wheels."""

from __future__ import annotations

from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface


class StartupFilesHook(BuildHookInterface):  # type: ignore[type-arg]
    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if version == "editable":
            build_data["force_include_editable"] = {
                "urandom_shim.pth": "urandom_shim.pth",
                "urandom_shim_pep829.start": "urandom_shim_pep829.start",
                # The package is imported from the source tree, so the bootstrap goes beside the .pth instead.
                "sitecustomize.py": "urandom_shim_bootstrap/sitecustomize.py",
            }
