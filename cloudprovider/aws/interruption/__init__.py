"""Involuntary disruption as EC2 reports it: the SQS interruption queue EventBridge fills (queue), its
events parsed (messages), and EC2 instance status checks and scheduled events read as interruptions
(instance_status)."""

__all__ = ["instance_status", "messages", "queue"]
