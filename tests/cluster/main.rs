//! Cluster-mode tests: the real `wasmlet` binary joined, as its own node identity, to the
//! real control plane that `scripts/control-plane.sh start` runs (etcd, kube-apiserver with
//! Node,RBAC and NodeRestriction, controller-manager, scheduler, kube-proxy), on the shared
//! real containerd. scripts/test.sh starts the control plane and names it in
//! `WASMLET_TEST_CLUSTER_DIR`; without one these tests fail, never skip.

use wasmlet_test_support::harness;

mod cluster;

mod api_objects;
mod control_plane_outage;
mod events;
mod eviction;
mod kubelet_api;
mod node;
mod pod_resize;
mod pod_updates;
mod pods;
mod relay;
mod static_pods;
mod status_reconcile;
mod workloads;
