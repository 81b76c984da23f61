"""The job launcher hwcheck runs under, read from its environment: one rank of a job's group.

torchrun (and Kubernetes' PyTorchJob operator, which sets the same variables) gives every
process RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT; Slurm's srun gives
SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID and the node list, and the job script usually exports
MASTER_ADDR and MASTER_PORT (else the first node of the list and torch's default port). Under
one of them `doctor --verify --distributed` joins that group as its rank instead of starting
its own processes. Every value is the environment's, so each is checked: a number in range, an
address of host-name characters; what does not fit is one line naming the variable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

# torch.distributed's default rendezvous port (torchrun's --master-port default).
DEFAULT_PORT = 29500
MAX_WORLD = 4096
_HOST = re.compile(r"[A-Za-z0-9_.:\-]{1,253}")


class LaunchError(ValueError):
    """A launcher's variable that does not fit; str() names it."""


@dataclass(frozen=True)
class Launch:
    """This process's place in a launched job."""

    launcher: str  # "torchrun", "env" (the same variables: a PyTorchJob, a script) or "slurm"
    rank: int
    world_size: int
    local_rank: int
    master_addr: str
    master_port: int

    def environment(self) -> dict[str, str]:
        """The variables torch.distributed's env:// rendezvous reads, for the rank's child."""
        return {
            "RANK": str(self.rank),
            "WORLD_SIZE": str(self.world_size),
            "LOCAL_RANK": str(self.local_rank),
            "MASTER_ADDR": self.master_addr,
            "MASTER_PORT": str(self.master_port),
        }


def launched(environ: Mapping[str, str]) -> Launch | None:
    """The job this process is a rank of (two ranks or more), None when none launched it."""
    if "RANK" in environ and "WORLD_SIZE" in environ:
        # torchrun's agent marks its workers; the same variables set otherwise (a PyTorchJob's
        # pods, a script) are the env:// rendezvous alone.
        elastic = "TORCHELASTIC_RUN_ID" in environ or "TORCHELASTIC_RESTART_COUNT" in environ
        launch = Launch(
            "torchrun" if elastic else "env",
            _number(environ, "RANK", MAX_WORLD - 1),
            _number(environ, "WORLD_SIZE", MAX_WORLD, low=1),
            _number(environ, "LOCAL_RANK", MAX_WORLD - 1, default=0),
            _host(environ.get("MASTER_ADDR", "127.0.0.1"), "MASTER_ADDR"),
            _number(environ, "MASTER_PORT", 65535, low=1, default=DEFAULT_PORT),
        )
    elif "SLURM_PROCID" in environ and "SLURM_NTASKS" in environ:
        nodes = environ.get("SLURM_JOB_NODELIST") or environ.get("SLURM_NODELIST") or ""
        address = environ.get("MASTER_ADDR") or first_node(nodes)
        if not address:
            raise LaunchError("MASTER_ADDR is not set and SLURM_NODELIST names no node")
        launch = Launch(
            "slurm",
            _number(environ, "SLURM_PROCID", MAX_WORLD - 1),
            _number(environ, "SLURM_NTASKS", MAX_WORLD, low=1),
            _number(environ, "SLURM_LOCALID", MAX_WORLD - 1, default=0),
            _host(address, "MASTER_ADDR" if environ.get("MASTER_ADDR") else "SLURM_NODELIST"),
            _number(environ, "MASTER_PORT", 65535, low=1, default=DEFAULT_PORT),
        )
    else:
        return None
    if launch.world_size < 2:
        return None  # a job of one process: the node's own devices are checked instead
    if launch.rank >= launch.world_size:
        raise LaunchError(f"rank {launch.rank} is not below the job's {launch.world_size} processes")
    return launch


def first_node(nodes: str) -> str:
    """The first host of a Slurm node list: "gpu[03-04,07],cpu1" gives "gpu03"."""
    head = nodes.strip().split(",", 1)[0] if "[" not in nodes.split(",", 1)[0] else nodes.strip()
    match = re.match(r"([^\[,]*)(?:\[([0-9]+))?", head)
    if not match:
        return ""
    return match.group(1) + (match.group(2) or "")


def _number(
    environ: Mapping[str, str], name: str, high: int, *, low: int = 0, default: int | None = None
) -> int:
    text = environ.get(name)
    if text is None and default is not None:
        return default
    value = (text or "").strip()
    if not value.isdigit() or not low <= int(value) <= high:
        raise LaunchError(f"{name}={value[:40]!r} is not a whole number from {low} to {high}")
    return int(value)


def _host(text: str, name: str) -> str:
    if not _HOST.fullmatch(text):
        raise LaunchError(f"{name}={text[:40]!r} is not a host name or address")
    return text
