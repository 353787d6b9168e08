//! A Kubernetes controller on larder: every config map labelled
//! `larder.example/mirror=true` gets a mirror, `<name>-mirror` in its
//! namespace, with the same data and an owner reference to it. A mirror
//! changed or deleted by hand is put back (the controller watches the
//! mirrors and maps each to its owner with `owner_keys`); a mirror whose
//! original is gone is deleted.
//!
//! ```text
//! cargo run --example kube_controller --features kube,etcd
//! cargo run --example kube_controller --features kube,etcd -- --demo
//! ```
//!
//! Without `--demo` it runs against the cluster of your kubeconfig until
//! stopped (Ctrl-C): `kubectl create configmap web --from-literal=a=1`,
//! `kubectl label configmap web larder.example/mirror=true`, then
//! `kubectl get configmap web-mirror -o yaml`.
//!
//! `--demo` needs no cluster: it starts the list/watch test server of
//! larder's own tests (`tests/common/kube_server/`, a test fixture that
//! speaks the API's list and watch protocol for pods and config maps, not
//! an API server) over the etcd at `--etcd URL` (default
//! `http://127.0.0.1:2379`), creates, changes and deletes config maps and
//! mirrors, waits until every mirror matches its original (at most 30 s,
//! else it exits non-zero) and prints a summary.

#[path = "../tests/common/kube_server/mod.rs"]
mod kube_server;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{DeleteParams, ObjectMeta, PostParams};
use kube::{Api, Client, ResourceExt};
use larder::IndexedStore;
use larder::controller::{Action, Controller, ControllerHandle, owner_keys};
use larder::reflector::{
    KubeSource, Reflector, StoreReader, meta_namespace_key, split_meta_namespace_key,
};

/// The label that asks for a mirror.
const MIRRORED: &str = "larder.example/mirror";
/// The label every mirror carries (the mirrors' reflector selects it).
const ROLE: &str = "larder.example/role";
/// How long the demo may take to converge.
const DEMO_LIMIT: Duration = Duration::from_secs(30);

/// The mirror an original asks for: its data, an owner reference to it.
fn mirror_of(original: &ConfigMap) -> ConfigMap {
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(format!("{}-mirror", original.name_any())),
            namespace: original.namespace(),
            labels: Some([(ROLE.to_string(), "mirror".to_string())].into()),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                name: original.name_any(),
                uid: original.uid().unwrap_or_default(),
                controller: Some(true),
                ..OwnerReference::default()
            }]),
            ..ObjectMeta::default()
        },
        data: original.data.clone(),
        ..ConfigMap::default()
    }
}

/// Makes the mirror of `key` (`namespace/name`) what its original asks.
async fn reconcile(
    client: Client,
    mirrors: StoreReader<String, ConfigMap>,
    key: String,
    original: Option<Arc<ConfigMap>>,
) -> Result<Action, kube::Error> {
    let Some((Some(namespace), name)) = split_meta_namespace_key(&key) else {
        return Ok(Action::done()); // config maps are namespaced: not ours
    };
    let api: Api<ConfigMap> = Api::namespaced(client, namespace);
    let mirror_name = format!("{name}-mirror");
    let current = mirrors.get(&format!("{namespace}/{mirror_name}"));
    let Some(original) = original else {
        // The original is gone (or lost its label): so does its mirror.
        if current.is_some() {
            match api.delete(&mirror_name, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(error) => return Err(error),
            }
        }
        return Ok(Action::done());
    };
    let mut desired = mirror_of(&original);
    match current {
        Some(current) if current.data == desired.data => {}
        Some(current) => {
            // Replace what the reader saw: a write since makes this a 409,
            // which the controller retries after the key's backoff.
            desired.metadata.resource_version = current.resource_version();
            api.replace(&mirror_name, &PostParams::default(), &desired)
                .await?;
        }
        None => match api.create(&PostParams::default(), &desired).await {
            Ok(_) => {}
            Err(kube::Error::Api(status)) if status.code == 409 => {
                // Created meanwhile: the mirror's change reconciles again.
            }
            Err(error) => return Err(error),
        },
    }
    Ok(Action::done())
}

/// Builds the controller over `client`: its handle and its future.
fn controller(
    client: Client,
) -> Result<(ControllerHandle<String>, impl Future<Output = ()> + Send), Box<dyn std::error::Error>>
{
    let originals = KubeSource::builder(Api::<ConfigMap>::all(client.clone()))
        .label_selector(format!("{MIRRORED}=true"))
        .build()?;
    let mirrors = KubeSource::builder(Api::<ConfigMap>::all(client.clone()))
        .label_selector(format!("{ROLE}=mirror"))
        .build()?;
    let mirrors = Reflector::builder(mirrors, IndexedStore::new()).build()?;
    let mirror_reader = mirrors.reader();
    let mirror_changes = mirrors.handler_registry();
    let originals = Reflector::builder(originals, IndexedStore::new()).build()?;
    let client = client.clone();
    let controller = Controller::builder(originals, move |key, original| {
        reconcile(client.clone(), mirror_reader.clone(), key, original)
    })
    .workers(4)
    .watches(mirror_changes, owner_keys::<ConfigMap, ConfigMap>())
    .on_error(|key, error| eprintln!("reconcile {key}: {error}"))
    .build()?;
    let handle = controller.handle();
    let run = async move {
        let mirrors = tokio::spawn(mirrors.run());
        controller.run().await;
        mirrors.abort();
    };
    Ok((handle, run))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if !args.iter().any(|a| a == "--demo") {
        let client = Client::try_default().await?;
        let (handle, run) = controller(client.clone())?;
        let running = tokio::spawn(run);
        tokio::signal::ctrl_c().await?;
        handle.shut_down();
        running.await?;
        return Ok(());
    }
    let etcd = args
        .iter()
        .position(|a| a == "--etcd")
        .and_then(|i| args.get(i + 1).cloned())
        .unwrap_or_else(|| "http://127.0.0.1:2379".into());
    let etcd = etcd_client::Client::connect([etcd], None).await?;
    let prefix = format!("/larder-kube-demo/{}/", std::process::id());
    let server = kube_server::KubeServer::start(etcd, &prefix).await;
    let client = server.client();
    let (handle, run) = controller(client.clone())?;
    let running = tokio::spawn(run);
    let started = Instant::now();

    // Originals in two namespaces; some changed, some deleted; mirrors
    // changed and deleted by hand.
    let mut expected = BTreeMap::new();
    for i in 0..40 {
        let namespace = ["default", "team-a"][i % 2];
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
        let name = format!("app-{i}");
        let mut original = ConfigMap {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                labels: Some([(MIRRORED.to_string(), "true".to_string())].into()),
                ..ObjectMeta::default()
            },
            data: Some([("replicas".to_string(), "1".to_string())].into()),
            ..ConfigMap::default()
        };
        let created = api.create(&PostParams::default(), &original).await?;
        if i % 3 == 0 {
            original.metadata.resource_version = created.resource_version();
            original.data = Some([("replicas".to_string(), "3".to_string())].into());
            api.replace(&name, &PostParams::default(), &original)
                .await?;
        }
        if i % 7 == 0 {
            api.delete(&name, &DeleteParams::default()).await?;
        } else {
            expected.insert(format!("{namespace}/{name}-mirror"), original.data);
        }
    }
    let sabotaged = sabotage_mirrors(&client).await?;

    // Converged when the mirrors, read through the API, are exactly the
    // expected ones with the expected data.
    loop {
        let mirrors: BTreeMap<_, _> = Api::<ConfigMap>::all(client.clone())
            .list(&kube::api::ListParams::default().labels(&format!("{ROLE}=mirror")))
            .await?
            .into_iter()
            .map(|m| (meta_namespace_key(&m), m.data))
            .collect();
        if mirrors == expected {
            break;
        }
        if started.elapsed() > DEMO_LIMIT {
            eprintln!(
                "not converged after {DEMO_LIMIT:?}: {} mirrors, {} expected",
                mirrors.len(),
                expected.len()
            );
            std::process::exit(1);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let stats = handle.stats();
    handle.shut_down();
    running.await?;
    println!(
        "converged in {:?}: {} mirrors ({} repaired by hand-made damage), {} reconciles, {} failed and retried",
        started.elapsed(),
        expected.len(),
        sabotaged,
        stats.reconciled,
        stats.failed,
    );
    Ok(())
}

/// Once the first mirrors exist, changes one by hand and deletes another:
/// the controller puts both back. Returns how many it damaged.
async fn sabotage_mirrors(client: &Client) -> Result<usize, kube::Error> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "team-a");
    let deadline = Instant::now() + DEMO_LIMIT;
    let mut damaged = 0;
    for name in ["app-1-mirror", "app-3-mirror"] {
        let mut mirror = loop {
            match api.get(name).await {
                Ok(mirror) => break mirror,
                Err(_) if Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(error) => return Err(error),
            }
        };
        if damaged == 0 {
            mirror.data = Some([("replicas".to_string(), "0".to_string())].into());
            api.replace(name, &PostParams::default(), &mirror).await?;
        } else {
            api.delete(name, &DeleteParams::default()).await?;
        }
        damaged += 1;
    }
    Ok(damaged)
}
