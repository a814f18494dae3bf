"""The trace format (DESIGN §5) and what is derived from a trace alone: an episode's L2 summary, its task type (the
state-changing tools it called) and the text it is found by (:mod:`~hindsight_lab.trace.summary`)."""

from .model import (Episode, FeedbackItem, MessageStep, ReflectionStep, ThoughtStep, ToolCallStep, ToolResultStep,
                    TraceStep)

__all__ = ["Episode", "FeedbackItem", "MessageStep", "ReflectionStep", "ThoughtStep", "ToolCallStep",
           "ToolResultStep", "TraceStep"]
