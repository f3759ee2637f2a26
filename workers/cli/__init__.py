"""The `nodeflow` command line: `main` (the console script's entry, also `python -m workers.cli`) in
workers.cli.main, one module per command group (dev, worker, simulate, explain, ops for
drain|expire|replace|status, crds, iam_policy, prices), each with `add_parser(subparsers)` and `run(args)`,
and the helpers only commands use (cluster_reads, disruption_dryrun, manifest_files, process_exit).
Nothing outside this package imports it; a command module is imported only when its command runs."""

from workers.cli.main import SUBCOMMANDS, build_parser, main

__all__ = ["SUBCOMMANDS", "build_parser", "main"]
