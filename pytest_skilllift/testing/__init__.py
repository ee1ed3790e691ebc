"""A scripted stand-in of the Anthropic Messages API, for tests, the demo and users' own tests."""

from pytest_skilllift.judge.protocol import JUDGE_MARKER
from pytest_skilllift.testing.agent_script import make_agent, skill_agent
from pytest_skilllift.testing.replies import Handler, Reply
from pytest_skilllift.testing.server import FAULT_KINDS, Faults, Recorded, StandIn

__all__ = [
    "FAULT_KINDS", "JUDGE_MARKER", "Faults", "Handler", "Recorded", "Reply", "StandIn",
    "make_agent", "skill_agent",
]
