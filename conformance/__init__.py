"""Differential conformance against real Volcano (DESIGN §8b, docs/conformance.md).

`conformance/oracle/` is a Go program that runs Volcano's own scheduler session (volcano.sh/volcano at
the version its go.mod pins) on a cluster dump and conf; `conformance.build` builds and caches it;
`conformance.generate` draws clusters and confs per family; `conformance.compare` says whether two
decision documents agree; `python -m conformance.run` runs both engines and shrinks any difference into
a scenario file.
"""
