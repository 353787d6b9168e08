//! The pods every comparison holds: a realistic shape (four labels, an
//! annotation, an owner reference to a ReplicaSet, two containers with
//! ports, environment and resource requests, a status with addresses and
//! conditions), [`PODS`] of them over [`NODES`] nodes and [`NAMESPACES`]
//! namespaces, the same on every run.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EnvVar, Pod, PodCondition, PodSpec, PodStatus, ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};

/// Pods in a full-size run.
pub const PODS: usize = 100_000;
/// Nodes the pods are scheduled to (a hundred pods a node at full size).
pub const NODES: usize = 1_000;
/// Namespaces the pods live in.
pub const NAMESPACES: usize = 100;
/// Pods a ReplicaSet owns.
pub const REPLICAS: usize = 10;

/// The namespace of pod `i`.
pub fn namespace(i: usize) -> String {
    format!("team-{:03}", i % NAMESPACES)
}

/// The node pod `i` runs on: consecutive pods land on different nodes.
pub fn node(i: usize) -> String {
    format!("node-{:04}", (i * 7919) % NODES)
}

/// A UUID-shaped identifier, fixed by `seed`.
fn uid(seed: u64) -> String {
    let x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x5851_f42d_4c95_7f2d;
    let y = x.rotate_left(29).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    format!(
        "{:08x}-{:04x}-4{:03x}-a{:03x}-{:012x}",
        x >> 32,
        (x >> 16) & 0xffff,
        x & 0xfff,
        y >> 52,
        y & 0xffff_ffff_ffff
    )
}

/// Pod `i` at `generation` (a later generation changes its resource
/// version, an annotation and its status, as a kubelet's update does).
pub fn pod(i: usize, generation: u64) -> Pod {
    let set = i / REPLICAS;
    let app = format!("service-{}", set % 500);
    let hash = format!(
        "{:010x}",
        (set as u64).wrapping_mul(0x2545_f491_4f6c_dd1d) >> 24
    );
    let labels: BTreeMap<String, String> = [
        ("app.kubernetes.io/name", app.clone()),
        ("app.kubernetes.io/part-of", format!("product-{}", set % 40)),
        ("pod-template-hash", hash.clone()),
        (
            "tier",
            ["frontend", "backend", "worker"][set % 3].to_owned(),
        ),
    ]
    .into_iter()
    .map(|(key, value)| (key.to_owned(), value))
    .collect();
    let container = |name: &str, image: &str, port: i32| Container {
        name: name.to_owned(),
        image: Some(format!(
            "registry.example.com/{image}:1.{}.{}",
            set % 9,
            generation % 7
        )),
        ports: Some(vec![ContainerPort {
            container_port: port,
            name: Some("http".to_owned()),
            protocol: Some("TCP".to_owned()),
            ..ContainerPort::default()
        }]),
        env: Some(vec![
            EnvVar {
                name: "SERVICE_NAME".to_owned(),
                value: Some(app.clone()),
                ..EnvVar::default()
            },
            EnvVar {
                name: "LOG_LEVEL".to_owned(),
                value: Some("info".to_owned()),
                ..EnvVar::default()
            },
        ]),
        resources: Some(ResourceRequirements {
            requests: Some(
                [
                    ("cpu".to_owned(), Quantity("250m".to_owned())),
                    ("memory".to_owned(), Quantity("256Mi".to_owned())),
                ]
                .into(),
            ),
            ..ResourceRequirements::default()
        }),
        ..Container::default()
    };
    let condition = |kind: &str| PodCondition {
        type_: kind.to_owned(),
        status: "True".to_owned(),
        ..PodCondition::default()
    };
    Pod {
        metadata: ObjectMeta {
            name: Some(format!("{app}-{hash}-{:05}", i % 100_000)),
            namespace: Some(namespace(i)),
            uid: Some(uid(i as u64)),
            resource_version: Some((1_000 + i as u64 + generation * PODS as u64).to_string()),
            generation: Some(1),
            labels: Some(labels),
            annotations: Some(
                [(
                    "example.com/restarted-at".to_owned(),
                    format!("generation-{generation}"),
                )]
                .into(),
            ),
            owner_references: Some(vec![OwnerReference {
                api_version: "apps/v1".to_owned(),
                kind: "ReplicaSet".to_owned(),
                name: format!("{app}-{hash}"),
                uid: uid(1 << 40 | set as u64),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..ObjectMeta::default()
        },
        spec: Some(PodSpec {
            node_name: Some(node(i)),
            containers: vec![
                container("app", "app", 8080),
                container("sidecar", "proxy", 15001),
            ],
            service_account_name: Some("default".to_owned()),
            ..PodSpec::default()
        }),
        status: Some(PodStatus {
            phase: Some("Running".to_owned()),
            host_ip: Some(format!("10.0.{}.{}", (i % NODES) / 250, (i % NODES) % 250)),
            pod_ip: Some(format!(
                "10.{}.{}.{}",
                64 + i / 65_536 % 64,
                i / 256 % 256,
                i % 256
            )),
            conditions: Some(vec![condition("Ready"), condition("ContainersReady")]),
            ..PodStatus::default()
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pods_spread_over_every_node_and_namespace_with_unique_names() {
        let mut names = std::collections::BTreeSet::new();
        let mut nodes = std::collections::BTreeMap::<String, usize>::new();
        let mut namespaces = std::collections::BTreeSet::new();
        for i in 0..PODS {
            let pod = pod(i, 0);
            let meta = &pod.metadata;
            assert!(names.insert((meta.namespace.clone(), meta.name.clone())));
            namespaces.insert(meta.namespace.clone().unwrap());
            *nodes.entry(node(i)).or_default() += 1;
        }
        assert_eq!(namespaces.len(), NAMESPACES);
        assert_eq!(nodes.len(), NODES);
        assert!(nodes.values().all(|&n| n == PODS / NODES));
    }
}
