//! `HandlerRegistry` (handlers added and removed while a reflector runs,
//! each with its own buffer) through the public API, on a tokio runtime:
//! a handler added mid-stream sees each object once (synthetic adds, then
//! every later change, with no gap and no repeat, across relists), a stuck
//! handler delays no event of another, each handler's own resync period,
//! removal, a handler added after the end, panics. Every wait is bounded: a hang fails with the test's name.

#![cfg(feature = "reflector")]

#[path = "common/alarms.rs"]
mod alarms;
#[path = "common/recorder.rs"]
mod recorder;
#[path = "common/reflecting.rs"]
mod reflecting;
#[path = "common/watchdog.rs"]
mod watchdog;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use alarms::Alarms;
use larder::reflector::{
    Handler, HandlerRegistry, Listed, MemorySource, Reflector, ReflectorBuildError,
    ReflectorHandle, Resync, Revision, Source, SourceError, WatchEvent,
};
use recorder::{Call, Recorder, Shared};
use reflecting::{LIMIT, Store, bounded, caught_up, fast, key, sorted, store};

type Rec = Arc<Recorder<String, u32>>;

/// A reflector from `source` into `store` (fast backoff), not yet
/// running, with its handle and its handler registry.
fn built(
    source: &MemorySource<String, u32>,
    store: Store,
) -> (
    Reflector<MemorySource<String, u32>>,
    ReflectorHandle,
    HandlerRegistry<String, u32>,
) {
    let reflector = Reflector::builder(source.clone(), store)
        .backoff(fast())
        .build()
        .unwrap();
    let (handle, registry) = (reflector.handle(), reflector.handler_registry());
    (reflector, handle, registry)
}

/// Handlers added at different moments (before the loop starts, in the
/// middle of bursts the loop is still applying, and to an idle loop) of a
/// busy source, while watches drop, revisions are compacted (relists) and
/// objects come and go: each
/// replays to exactly the source's final content with no violation (a
/// repeat shows as a duplicate add, a gap as an update or delete of an
/// unknown key, or as a missing object).
#[test]
fn handlers_added_while_running_see_each_object_once() {
    bounded("handlers_added_while_running", async {
        let source = MemorySource::new();
        for i in 0..40 {
            source.put(key(i), i);
        }
        let store = store();
        let (reflector, handle, registry) = built(&source, store);
        let store = reflector.reader();
        // One handler before the loop starts.
        let mut recorders: Vec<Rec> = Vec::new();
        let mut deliveries = Vec::new();
        let mut registrations = Vec::new();
        let mut add = |recorders: &mut Vec<Rec>| {
            let recorder = Recorder::new();
            let (registration, delivery) = registry.add(Shared(Arc::clone(&recorder)));
            recorders.push(recorder);
            registrations.push(registration);
            deliveries.push(tokio::spawn(delivery));
        };
        add(&mut recorders);
        let task = tokio::spawn(reflector.run());
        handle.wait_until_synced().await.unwrap();
        for round in 0..12_u32 {
            for i in 0..25 {
                source.put(key((i * 7 + round) % 60), round * 100 + i);
                if i % 5 == 0 {
                    source.delete(&key((i * 3 + round) % 60));
                }
                if i == 12 {
                    add(&mut recorders); // mid-burst
                }
                if i % 8 == 0 {
                    tokio::task::yield_now().await;
                }
            }
            match round % 3 {
                0 => {
                    source.fail_watches(1);
                    source.drop_watches();
                    source.put(key(99), round);
                    source.compact(source.revision());
                }
                1 => source.drop_watches(),
                _ => source.bookmark(),
            }
            if round % 2 == 1 {
                // Added to an idle loop, joined before the next change.
                caught_up(&handle, &source).await;
                add(&mut recorders);
            }
            tokio::task::yield_now().await;
        }
        caught_up(&handle, &source).await;
        // The end closes every buffer: each delivery drains and completes.
        handle.stop();
        task.await.unwrap();
        for delivery in deliveries {
            delivery.await.unwrap();
        }
        assert!(
            registrations
                .iter()
                .all(|registration| registration.has_synced())
        );
        let expected = source.to_vec_sorted();
        assert_eq!(sorted(&store), expected);
        for (n, recorder) in recorders.iter().enumerate() {
            assert_eq!(recorder.violations(), Vec::<String>::new(), "handler {n}");
            assert_eq!(recorder.model(), expected, "handler {n}");
        }
    });
}

/// A handler added while the loop is inside a change (here from the
/// store's index function, which the loop runs as it writes the change):
/// it joins after that change's notification went out, so the change
/// reaches it once, through the content it starts from, not also as an
/// update.
#[test]
fn a_handler_added_inside_a_change_sees_it_once() {
    use larder::IndexedStore;
    use larder::reflector::{HandlerDelivery, HandlerRegistration};
    use std::sync::OnceLock;

    type Added = (
        HandlerRegistration<String, u32>,
        HandlerDelivery<String, u32>,
    );
    bounded("a_handler_added_inside_a_change", async {
        let registry: Arc<OnceLock<HandlerRegistry<String, u32>>> = Arc::new(OnceLock::new());
        let added: Arc<Mutex<Option<Added>>> = Arc::new(Mutex::new(None));
        let recorder = Recorder::new();
        let store = {
            let (registry, added, recorder) = (
                Arc::clone(&registry),
                Arc::clone(&added),
                Arc::clone(&recorder),
            );
            IndexedStore::<String, Arc<u32>>::builder()
                .index("value", move |v: &Arc<u32>| {
                    if **v == 777 {
                        let mut added = added.lock().unwrap();
                        if added.is_none() {
                            let registry = registry.get().unwrap();
                            *added = Some(registry.add(Shared(Arc::clone(&recorder))));
                        }
                    }
                    [v.to_string()]
                })
                .build()
                .unwrap()
        };
        let source = MemorySource::new();
        source.put(key(1), 1);
        let (reflector, handle, handlers) = built(&source, store);
        registry.set(handlers).unwrap();
        let task = tokio::spawn(reflector.run());
        handle.wait_until_synced().await.unwrap();
        source.put(key(1), 777); // the update that adds the handler
        source.put(key(2), 2);
        caught_up(&handle, &source).await;
        let (registration, delivery) = added.lock().unwrap().take().unwrap();
        handle.stop();
        task.await.unwrap();
        delivery.await;
        assert!(registration.has_synced());
        assert_eq!(recorder.violations(), Vec::<String>::new());
        assert_eq!(recorder.model(), [(key(1), 777), (key(2), 2)]);
    });
}

/// The bound a stuck handler puts on the others: none. With one of ten
/// handlers blocked in its first call, the loop and the nine others take
/// every one of 1,000 changes while the stuck one has returned from no
/// call; released, it catches up with everything, in order.
#[test]
fn a_stuck_handler_delays_no_event_of_another() {
    struct Blocked(Mutex<mpsc::Receiver<()>>, Arc<AtomicUsize>);
    impl Handler<String, u32> for Blocked {
        fn on_add(&self, _key: &String, _new: &Arc<u32>) {
            self.0.lock().unwrap().recv().unwrap();
            self.1.fetch_add(1, Ordering::SeqCst);
        }
    }
    const CHANGES: u32 = 1_000;
    bounded("a_stuck_handler_delays_no_event_of_another", async {
        let source = MemorySource::new();
        let store = store();
        let (reflector, handle, registry) = built(&source, store);
        let (release, blocked) = mpsc::channel();
        let stuck_count = Arc::new(AtomicUsize::new(0));
        let (_stuck, stuck_delivery) =
            registry.add(Blocked(Mutex::new(blocked), Arc::clone(&stuck_count)));
        // Its own thread: it blocks.
        let stuck = std::thread::spawn(move || futures_block_on(stuck_delivery));
        let others: Vec<Rec> = (0..9).map(|_| Recorder::new()).collect();
        let mut deliveries = Vec::new();
        let mut registrations = Vec::new();
        for recorder in &others {
            let (registration, delivery) = registry.add(Shared(Arc::clone(recorder)));
            registrations.push(registration);
            deliveries.push(tokio::spawn(delivery));
        }
        let task = tokio::spawn(reflector.run());
        for i in 0..CHANGES {
            source.put(key(i), i);
        }
        caught_up(&handle, &source).await; // the loop is not held up
        for recorder in &others {
            while recorder.model().len() < CHANGES as usize {
                tokio::task::yield_now().await; // nor is any other handler
            }
            assert_eq!(recorder.violations(), Vec::<String>::new());
        }
        assert_eq!(stuck_count.load(Ordering::SeqCst), 0);
        for _ in 0..CHANGES {
            release.send(()).unwrap();
        }
        handle.stop();
        task.await.unwrap();
        for delivery in deliveries {
            delivery.await.unwrap();
        }
        tokio::task::spawn_blocking(move || stuck.join().unwrap())
            .await
            .unwrap();
        assert_eq!(stuck_count.load(Ordering::SeqCst), CHANGES as usize);
    });
}

/// A removed handler gets nothing more, and its delivery completes; a
/// dropped delivery removes its handler too.
#[test]
fn a_removed_handler_gets_nothing_more() {
    bounded("a_removed_handler_gets_nothing_more", async {
        let source = MemorySource::new();
        source.put(key(1), 1);
        let store = store();
        let (reflector, handle, registry) = built(&source, store);
        let task = tokio::spawn(reflector.run());
        handle.wait_until_synced().await.unwrap();
        let recorder = Recorder::new();
        let (registration, delivery) = registry.add(Shared(Arc::clone(&recorder)));
        let delivering = tokio::spawn(delivery);
        while !registration.has_synced() {
            tokio::task::yield_now().await;
        }
        registration.remove();
        delivering.await.unwrap(); // completes without a stop
        source.put(key(2), 2);
        caught_up(&handle, &source).await;
        assert_eq!(recorder.model(), [(key(1), 1)]);
        let (dropped, delivery) = registry.add(Shared(Recorder::new()));
        drop(delivery);
        assert!(!dropped.has_synced());
        assert!(format!("{registry:?}").contains("pending: 0, active: 0"));
        handle.stop();
        task.await.unwrap();
    });
}

/// Adding a handler to a reflector that has ended succeeds (client-go
/// returns an error instead): the handler gets the final content, has
/// synced, and its delivery completes, exactly as for a handler added just
/// before the end, so a program has one end signal whichever came first;
/// `ReflectorHandle::is_finished` tells the two apart. A reflector dropped
/// unrun ends its registry the same way.
#[test]
fn a_handler_added_after_the_end_gets_the_final_content() {
    bounded("a_handler_added_after_the_end", async {
        let source = MemorySource::new();
        source.put(key(1), 1);
        source.put(key(2), 2);
        let store = store();
        let (reflector, handle, registry) = built(&source, store);
        let task = tokio::spawn(reflector.run());
        handle.wait_until_synced().await.unwrap();
        let (before, after) = (Recorder::new(), Recorder::new());
        let (early, early_delivery) = registry.add(Shared(Arc::clone(&before)));
        let early_delivery = tokio::spawn(early_delivery);
        until(|| early.has_synced()).await;
        handle.stop();
        task.await.unwrap();
        assert!(handle.is_finished());
        let (late, late_delivery) = registry.add(Shared(Arc::clone(&after)));
        tokio::time::timeout(LIMIT, late_delivery).await.unwrap();
        tokio::time::timeout(LIMIT, early_delivery)
            .await
            .unwrap()
            .unwrap();
        assert!(late.has_synced());
        source.put(key(3), 3); // nobody delivers it any more
        for recorder in [&before, &after] {
            assert_eq!(recorder.model(), [(key(1), 1), (key(2), 2)]);
            assert_eq!(recorder.violations(), Vec::<String>::new());
        }

        let (unrun, _, unrun_registry) = built(&source, reflecting::store());
        drop(unrun);
        let (registration, delivery) = unrun_registry.add(Shared(Recorder::new()));
        tokio::time::timeout(LIMIT, delivery).await.unwrap();
        assert!(registration.has_synced());
    });
}

/// A panicking added handler is counted and reported to `on_error` (from
/// its delivery's task), and its later notifications still come.
#[test]
fn an_added_handler_that_panics_is_reported_counted_and_goes_on() {
    struct Panics(Arc<AtomicUsize>);
    impl Handler<String, u32> for Panics {
        fn on_add(&self, key: &String, _new: &Arc<u32>) {
            self.0.fetch_add(1, Ordering::SeqCst);
            assert_ne!(key, "k001", "handler panicked on purpose");
        }
    }
    bounded("an_added_handler_that_panics", async {
        let source = MemorySource::new();
        let errors = Arc::new(Mutex::new(Vec::new()));
        let reflector = Reflector::builder(source.clone(), store())
            .on_error({
                let errors = Arc::clone(&errors);
                move |error| errors.lock().unwrap().push(error.to_string())
            })
            .backoff(fast())
            .build()
            .unwrap();
        let (handle, registry) = (reflector.handle(), reflector.handler_registry());
        let calls = Arc::new(AtomicUsize::new(0));
        let (_registration, delivery) = registry.add(Panics(Arc::clone(&calls)));
        let delivering = tokio::spawn(delivery);
        let task = tokio::spawn(reflector.run());
        for i in 0..3 {
            source.put(key(i), i);
        }
        caught_up(&handle, &source).await;
        handle.stop();
        task.await.unwrap();
        delivering.await.unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 3);
        assert_eq!(handle.stats().handler_panics, 1);
        let errors = errors.lock().unwrap().clone();
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(
            errors[0].starts_with("handler on_add panicked: ")
                && errors[0].contains("handler panicked on purpose"),
            "{errors:?}"
        );
    });
}

const OWN_PERIOD: Duration = Duration::from_secs(7);
const REFLECTOR_PERIOD: Duration = Duration::from_secs(11);

/// Waits (yielding) until `done` holds; the test's bound catches a hang.
async fn until(mut done: impl FnMut() -> bool) {
    while !done() {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

fn resync_updates(recorder: &Rec) -> usize {
    let state = recorder.state.lock().unwrap();
    let resyncs = state.calls.iter();
    resyncs
        .filter(|call| matches!(call, Call::Update(_, old, new) if old == new))
        .count()
}

fn has_key(recorder: &Rec, wanted: &str) -> bool {
    recorder.model().iter().any(|(k, _)| k == wanted)
}

/// Each added handler resyncs on its own period (client-go's
/// `AddEventHandlerWithResyncPeriod`): a handler's own timer re-delivers
/// every object to it alone; the reflector's resync goes to the handlers
/// added without a period of their own; `Resync::Never` opts out of both.
/// Timers are fired by the test: no sleeping.
#[test]
fn each_added_handler_resyncs_on_its_own_period() {
    bounded("each_added_handler_resyncs_on_its_own_period", async {
        let alarms = Arc::new(Alarms::default());
        let timer = {
            let alarms = Arc::clone(&alarms);
            move |duration: Duration| alarms.sleep(duration)
        };
        let source = MemorySource::new();
        for i in 0..3 {
            source.put(key(i), i);
        }
        let store = store();
        let reflector = Reflector::builder(source.clone(), store)
            .backoff(fast())
            .resync(Resync::Every(REFLECTOR_PERIOD))
            .timer(timer)
            .build()
            .unwrap();
        let store = reflector.reader();
        let (handle, registry) = (reflector.handle(), reflector.handler_registry());
        let zero = registry.add_with_resync(Shared(Recorder::new()), Resync::Every(Duration::ZERO));
        assert_eq!(zero.unwrap_err(), ReflectorBuildError::ZeroResyncPeriod);
        let (own, never, inherit): (Rec, Rec, Rec) =
            (Recorder::new(), Recorder::new(), Recorder::new());
        let own_period = Resync::Every(OWN_PERIOD);
        let registrations = [
            registry
                .add_with_resync(Shared(Arc::clone(&own)), own_period)
                .unwrap(),
            registry
                .add_with_resync(Shared(Arc::clone(&never)), Resync::Never)
                .unwrap(),
            registry.add(Shared(Arc::clone(&inherit))),
        ];
        let mut deliveries = Vec::new();
        let mut kept = Vec::new();
        for (registration, delivery) in registrations {
            deliveries.push(tokio::spawn(delivery));
            kept.push(registration);
        }
        let task = tokio::spawn(reflector.run());
        until(|| kept.iter().all(|r| r.has_synced())).await;
        let all = [&own, &never, &inherit];

        // The handler's own timer (one, started when it joined): two
        // firings, each re-delivering every object (three, then four) to
        // it alone.
        let mut expected = 0;
        for round in 1..=2 {
            expected += store.len();
            assert_eq!(alarms.fire(OWN_PERIOD), 1);
            until(|| resync_updates(&own) == expected).await;
            let marker = format!("own{round}");
            source.put(marker.clone(), 100 + round as u32);
            until(|| all.iter().all(|r| has_key(r, &marker))).await;
            assert_eq!(resync_updates(&own), expected);
        }
        assert_eq!(resync_updates(&never), 0);
        assert_eq!(resync_updates(&inherit), 0);

        // The reflector's resync: every object (five now) to the handler
        // that inherits it, none to the other two.
        assert_eq!(alarms.fire(REFLECTOR_PERIOD), 1);
        until(|| resync_updates(&inherit) == 5).await;
        source.put("last".to_string(), 7);
        until(|| all.iter().all(|r| has_key(r, "last"))).await;
        assert_eq!(resync_updates(&own), 7);
        assert_eq!(resync_updates(&never), 0);
        assert_eq!(resync_updates(&inherit), 5);
        assert_eq!(handle.stats().resyncs, 1);
        for recorder in all {
            assert_eq!(recorder.violations(), Vec::<String>::new());
            assert_eq!(recorder.model(), sorted(&store));
        }

        handle.stop();
        task.await.unwrap();
        for delivery in deliveries {
            delivery.await.unwrap();
        }
    });
}

/// A source whose first watch delivers one transaction, two keys at
/// revision 1, both ready at once (as etcd sends a transaction's events in
/// one response), then nothing.
struct OneTransaction;

struct Events(std::collections::VecDeque<WatchEvent<String, u32>>);

impl futures_core::Stream for Events {
    type Item = Result<WatchEvent<String, u32>, SourceError>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        match self.0.pop_front() {
            Some(event) => std::task::Poll::Ready(Some(Ok(event))),
            None => std::task::Poll::Pending, // woken by nothing: the stop ends the loop
        }
    }
}

impl Source for OneTransaction {
    type Key = String;
    type Object = u32;
    type Watch = Events;

    async fn list(&self) -> Result<Listed<String, u32>, SourceError> {
        Ok(Listed {
            items: Vec::new(),
            revision: 0,
            invalid: Vec::new(),
        })
    }

    async fn watch(&self, from: Revision) -> Result<Events, SourceError> {
        let put = |key: &str, object| WatchEvent::Put {
            key: key.to_string(),
            object,
            revision: 1,
        };
        let events = if from == 0 {
            vec![put("a", 1), put("b", 2)]
        } else {
            Vec::new()
        };
        Ok(Events(events.into()))
    }
}

/// Records each add and whether its own registration had synced then
/// (false during the synthetic adds, true for live ones).
struct SeesSync {
    registration: std::sync::OnceLock<larder::reflector::HandlerRegistration<String, u32>>,
    calls: Mutex<Vec<(String, bool)>>,
}

struct Sees(Arc<SeesSync>);

impl Handler<String, u32> for Sees {
    fn on_add(&self, key: &String, _: &Arc<u32>) {
        let synced = self.0.registration.get().is_some_and(|r| r.has_synced());
        self.0.calls.lock().unwrap().push((key.clone(), synced));
    }
}

/// A handler added during the first key of a transaction (by a builder
/// handler, on the loop's task) joins after the whole transaction: both
/// keys reach it as synthetic adds, before it has synced (joining between
/// the two keys would show it half a revision, then the second key live).
#[test]
fn a_handler_added_mid_transaction_joins_after_the_whole_revision() {
    bounded(
        "a_handler_added_mid_transaction_joins_after_the_whole_revision",
        async {
            let joined = Arc::new(SeesSync {
                registration: std::sync::OnceLock::new(),
                calls: Mutex::new(Vec::new()),
            });
            let slot: Arc<Mutex<Option<HandlerRegistry<String, u32>>>> = Arc::default();
            let deliveries = Arc::new(Mutex::new(Vec::new()));
            let reflector = Reflector::builder(OneTransaction, store())
                .on_add({
                    let (slot, joined, deliveries) = (
                        Arc::clone(&slot),
                        Arc::clone(&joined),
                        Arc::clone(&deliveries),
                    );
                    move |key: &String, _: &Arc<u32>| {
                        if key == "a" {
                            let registry = slot.lock().unwrap().clone().unwrap();
                            let (registration, delivery) = registry.add(Sees(Arc::clone(&joined)));
                            let _ = joined.registration.set(registration);
                            deliveries.lock().unwrap().push(tokio::spawn(delivery));
                        }
                    }
                })
                .build()
                .unwrap();
            let handle = reflector.handle();
            *slot.lock().unwrap() = Some(reflector.handler_registry());
            let task = tokio::spawn(reflector.run());
            until(|| joined.registration.get().is_some_and(|r| r.has_synced())).await;
            let mut calls = joined.calls.lock().unwrap().clone();
            calls.sort();
            assert_eq!(calls, [("a".to_string(), false), ("b".to_string(), false)]);
            handle.stop();
            task.await.unwrap();
            let deliveries = std::mem::take(&mut *deliveries.lock().unwrap());
            for delivery in deliveries {
                delivery.await.unwrap();
            }
        },
    );
}

/// Drives `future` to completion on the calling thread.
fn futures_block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap()
        .block_on(future)
}
