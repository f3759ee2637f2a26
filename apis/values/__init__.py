"""The value syntaxes the API models are written in, parsed and formatted exactly, with nothing else of
the models: Kubernetes resource quantities in integer units (quantity), Go-style durations as Karpenter
writes them, "Never" included (duration), and the string syntax of label keys and values, taint keys and
values (syntax)."""

__all__ = ["duration", "quantity", "syntax"]
