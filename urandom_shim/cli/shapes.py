"""The shapes of what ``status --json`` and ``check --json`` print (docs/reference/cli.md): :mod:`.facts` fills them in,
:mod:`.text` reads them. Types only.
"""

from __future__ import annotations

from typing import Dict, List, Optional, TypedDict


class KernelFacts(TypedDict):
    crng: str
    entropy_avail: Optional[int]
    poolsize: Optional[int]
    release: Optional[str]


class SimulationFacts(TypedDict):
    spec: str
    valid: bool
    unready: bool


class PythonFacts(TypedDict):
    executable: str
    version: str
    implementation: str
    native: str


class SettingFacts(TypedDict):
    """One effective setting: its value (a policy by name) and where it came from."""

    value: object
    source: str


class SiteRow(TypedDict):
    """One call site: its column of the policy table, in words, and the action the engine takes there."""

    site: str
    label: str
    action: str
    says: str


class ActivationFacts(TypedDict):
    active: bool
    activated_by: Optional[str]
    inactive_reason: Optional[str]
    pth: Optional[str]
    patched: bool
    package: str


class StatusFacts(ActivationFacts):
    """Everything ``status`` says."""

    version: str
    python: PythonFacts
    limits: List[str]
    policy: str
    policy_source: str
    settings: Dict[str, SettingFacts]
    resolved_for: str
    sites: List[SiteRow]
    run_start: str
    crng: str
    kernel: KernelFacts
    simulation: Optional[SimulationFacts]
    problems: List[str]


class SourceTried(TypedDict):
    source: str
    notes: List[str]


class CheckFacts(TypedDict):
    """Everything ``check`` says."""

    resolved_for: str
    program: Optional[str]
    project_rule: str
    sources: List[SourceTried]
    settings: Dict[str, SettingFacts]
    policy: str
    policy_source: str
    run_start: str
    limits: List[str]
    events_file: Optional[str]
    advice: List[str]
    problems: List[str]
    clean: bool
