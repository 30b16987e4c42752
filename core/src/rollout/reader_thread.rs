//! One thread for every rollout read of the process. Reads allocate briefly but a lot (a line
//! can be megabytes); done on the blocking pool, each new pool thread would get its own malloc
//! arena and keep its high-water mark, so a server's peak memory would grow with every read
//! that landed on a fresh thread. On one thread, reads reuse the same memory.

use std::sync::OnceLock;
use std::sync::mpsc;

use tokio::sync::oneshot;

type Job = Box<dyn FnOnce() + Send>;

static READER: OnceLock<Option<mpsc::Sender<Job>>> = OnceLock::new();

fn reader() -> Option<&'static mpsc::Sender<Job>> {
    READER
        .get_or_init(|| {
            let (jobs, queue) = mpsc::channel::<Job>();
            let started = std::thread::Builder::new()
                .name("keel-rollout-reader".to_string())
                .spawn(move || {
                    while let Ok(job) = queue.recv() {
                        job();
                    }
                });
            match started {
                Ok(_) => Some(jobs),
                Err(err) => {
                    tracing::warn!(%err, "no rollout reader thread; reading on the blocking pool");
                    None
                }
            }
        })
        .as_ref()
}

/// Runs `read` on the rollout reader thread (queued behind earlier reads) and returns its
/// result; `None` if the thread is gone.
pub(crate) async fn on_reader_thread<T: Send + 'static>(
    read: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    let Some(reader) = reader() else {
        return tokio::task::spawn_blocking(read).await.ok();
    };
    let (done, result) = oneshot::channel();
    let job: Job = Box::new(move || {
        // The receiver may be gone (the request was cancelled); the result is dropped then.
        let _ = done.send(read());
    });
    reader.send(job).ok()?;
    result.await.ok()
}
