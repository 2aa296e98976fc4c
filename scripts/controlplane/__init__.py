"""`scripts/control-plane up|down|env|restart|compact`: a real Kubernetes control plane on 127.0.0.1.

kube-apiserver and kube-controller-manager (k8s.io/kubernetes), etcd (go.etcd.io/etcd/server/v3) and
kwok (sigs.k8s.io/kwok, the fake kubelets) are built once from the Go module in `go/` into
~/.cache/vpolicy/controlplane/bin/<hash>/ and run as plain processes: no containers, no root. The e2e
tests (tests/e2e/) and `python -m benchmarks.live` start it through this command, as a user would.

Modules: `layout` (where everything lives), `build` (go build, cached), `certs` (a CA and the
certificates each component presents), `components` (command lines, start, stop, readiness),
`api` (the few HTTPS calls `up` makes: CRDs, waiting for the cluster), `cli` (the subcommands).
"""
