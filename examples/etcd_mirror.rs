//! Mirrors an etcd prefix into an indexed store and prints index lookups as
//! keys change.
//!
//! Start etcd (`etcd` with no flags listens on 127.0.0.1:2379; on Debian and
//! Ubuntu `apt-get install etcd-server`), then:
//!
//! ```text
//! cargo run --example etcd_mirror --features etcd -- --demo
//! ```
//!
//! `--demo` writes, updates and deletes a few pods itself and exits; without
//! it the example mirrors until stopped (Ctrl-C), so change keys with
//! `etcdctl put /larder-demo/pods/web-1 'ns=shop app=web'`. `--endpoint URL`
//! picks another server (default `http://127.0.0.1:2379`, or
//! `$ETCD_ENDPOINT`).

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use larder::IndexedStore;
use larder::reflector::{EtcdSource, Reflector, StoreReader};

const PREFIX: &str = "/larder-demo/pods/";

/// A pod as the demo stores it: `ns=<namespace> app=<app>`.
#[derive(Debug, Clone, PartialEq)]
struct Pod {
    namespace: String,
    app: String,
}

fn decode(bytes: &[u8]) -> Result<Pod, String> {
    let text = std::str::from_utf8(bytes).map_err(|e| e.to_string())?;
    let (mut namespace, mut app) = (None, None);
    for field in text.split_whitespace() {
        match field.split_once('=') {
            Some(("ns", value)) => namespace = Some(value.to_owned()),
            Some(("app", value)) => app = Some(value.to_owned()),
            _ => return Err(format!("unexpected field {field:?}")),
        }
    }
    Ok(Pod {
        namespace: namespace.ok_or("no ns=")?,
        app: app.ok_or("no app=")?,
    })
}

fn lookups(store: &StoreReader<String, Pod>) -> String {
    let mut parts = Vec::new();
    for (index, values) in [("namespace", ["shop", "billing"]), ("app", ["web", "db"])] {
        for value in values {
            let mut keys = store.index_keys(index, value).expect("the index exists");
            keys.sort();
            let names: Vec<_> = keys.iter().map(|k| k.trim_start_matches(PREFIX)).collect();
            parts.push(format!("{index}={value}: {names:?}"));
        }
    }
    parts.join("  ")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let demo = args.iter().any(|a| a == "--demo");
    let endpoint = args
        .iter()
        .position(|a| a == "--endpoint")
        .and_then(|i| args.get(i + 1).cloned())
        .or_else(|| std::env::var("ETCD_ENDPOINT").ok())
        .unwrap_or_else(|| "http://127.0.0.1:2379".to_owned());

    let options = etcd_client::ConnectOptions::new()
        .with_connect_timeout(Duration::from_secs(2))
        .with_keep_alive(Duration::from_secs(5), Duration::from_secs(5));
    let mut client = etcd_client::Client::connect([endpoint.as_str()], Some(options)).await?;
    if demo {
        // The demo starts from an empty prefix.
        client
            .delete(
                PREFIX,
                Some(etcd_client::DeleteOptions::new().with_prefix()),
            )
            .await?;
    }
    let source = EtcdSource::builder(client.clone(), PREFIX, decode).build()?;

    let store = IndexedStore::<String, Arc<Pod>>::builder()
        .index("namespace", |pod: &Arc<Pod>| [pod.namespace.clone()])
        .index("app", |pod: &Arc<Pod>| [pod.app.clone()])
        .build()?;
    // The handlers read the store through the reflector's reader, which
    // exists once the reflector is built (the reflector owns the store).
    let reader: Arc<OnceLock<StoreReader<String, Pod>>> = Arc::default();
    let (on_add, on_update, on_delete) = (reader.clone(), reader.clone(), reader.clone());
    let reflector = Reflector::builder(source.clone(), store)
        .on_add(move |key, pod| {
            let lookups = on_add.get().map(lookups).unwrap_or_default();
            println!("added   {key} {pod:?}\n        {lookups}");
        })
        .on_update(move |key, old, new| {
            let lookups = on_update.get().map(lookups).unwrap_or_default();
            println!("updated {key} {old:?} -> {new:?}\n        {lookups}");
        })
        .on_delete(move |key, _| {
            let lookups = on_delete.get().map(lookups).unwrap_or_default();
            println!("deleted {key}\n        {lookups}");
        })
        .on_error(|error| eprintln!("reflector: {error}"))
        .parse_invalid_key(|key| Some(key.to_owned()))
        .build()?;
    let store = reflector.reader();
    reader.set(store.clone()).expect("set once");
    let handle = reflector.handle();
    let task = tokio::spawn(reflector.run());
    handle
        .wait_until_synced_timeout(Duration::from_secs(10))
        .await?;
    println!(
        "mirroring {PREFIX} from {endpoint}: {} pods at revision {}",
        store.len(),
        handle.revision()
    );

    if !demo {
        task.await?;
        return Ok(());
    }
    // Change the prefix and read back.
    let changes: [(&str, Option<&str>); 6] = [
        ("web-1", Some("ns=shop app=web")),
        ("db-1", Some("ns=shop app=db")),
        ("web-2", Some("ns=billing app=web")),
        ("web-1", Some("ns=billing app=web")),
        ("broken", Some("not a pod")),
        ("db-1", None),
    ];
    for (name, value) in changes {
        let key = format!("{PREFIX}{name}");
        match value {
            Some(value) => drop(client.put(key, value, None).await?),
            None => drop(client.delete(key, None).await?),
        }
        // Read your write: wait until the store has applied it.
        let revision = source
            .wait_consistent(&handle, Duration::from_secs(5))
            .await?;
        println!("  (store at revision {revision}, {} pods)", store.len());
    }
    for name in ["web-1", "web-2", "broken"] {
        client.delete(format!("{PREFIX}{name}"), None).await?;
    }
    source
        .wait_consistent(&handle, Duration::from_secs(5))
        .await?;
    println!("statistics: {:?}", handle.stats());
    handle.stop();
    task.await?;
    Ok(())
}
