"""Agent runtime (design §13): loop contexts and slot scheduling, the agent loop of one user
message (route, recall, prompt, model, tools), its built-in tools and prompt summaries.

Examples
--------
>>> from maclaw_fast.agent import BackgroundLoopManager
>>> m = BackgroundLoopManager()
>>> m.spawn("coding").id
'bg-coding-1'
"""

from maclaw_fast.agent.features import AgentFeatures, FeatureNotes, notes_line
from maclaw_fast.agent.handlers import BuiltinHandler, ToolContext
from maclaw_fast.agent.loop import Agent, AgentConfig, AgentTurn, ToolCallRecord
from maclaw_fast.agent.prompt import (build_system_prompt, self_identity_summary, summarize,
                                      user_fact_summary)
from maclaw_fast.agent.sandbox import Sandbox, run_bash
from maclaw_fast.agent.slots import (BackgroundLoopManager, LoopContext, LoopEvent, SlotConfig,
                                     Ticket)

__all__ = [
    "Agent", "AgentConfig", "AgentFeatures", "AgentTurn", "BackgroundLoopManager",
    "BuiltinHandler", "FeatureNotes", "LoopContext", "LoopEvent", "Sandbox", "SlotConfig",
    "Ticket", "ToolCallRecord", "ToolContext", "build_system_prompt", "notes_line", "run_bash",
    "self_identity_summary", "summarize", "user_fact_summary",
]
