//! Reusable byte buffers for bulk output.
//!
//! Output moves in chunks of up to 256 KiB. Allocating a fresh buffer for each one costs more
//! than it seems: glibc hands blocks that large back to the kernel when they are freed, so
//! every chunk faults its pages in again (zeroed) and unmaps them afterwards, and the data
//! never stays in cache. A [`BufferPool`] lends buffers out instead and takes them back when
//! the last [`Bytes`] referring to one is dropped, so a steady stream cycles through the same
//! few buffers.

use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;

/// A bounded stack of idle buffers, shared by clones.
///
/// It never limits how many buffers are out at once (that is the job of the bounded queues
/// they travel through); it only bounds how many idle ones it keeps, and so the memory it
/// holds while nothing flows.
#[derive(Clone)]
pub(crate) struct BufferPool {
    shared: Arc<Shared>,
}

struct Shared {
    idle: Mutex<Vec<Vec<u8>>>,
    /// Capacity of a new buffer.
    buffer_bytes: usize,
    /// Idle buffers kept; more are freed.
    keep: usize,
}

impl BufferPool {
    /// A pool of `buffer_bytes` buffers that keeps at most `keep` idle ones.
    pub(crate) fn new(buffer_bytes: usize, keep: usize) -> Self {
        Self {
            shared: Arc::new(Shared {
                idle: Mutex::new(Vec::with_capacity(keep)),
                buffer_bytes,
                keep,
            }),
        }
    }

    /// Capacity of the buffers this pool hands out.
    pub(crate) fn buffer_bytes(&self) -> usize {
        self.shared.buffer_bytes
    }

    /// An empty buffer with at least [`Self::buffer_bytes`] of capacity: an idle one if there
    /// is one, else a new one.
    pub(crate) fn take(&self) -> Vec<u8> {
        let idle = self
            .shared
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        idle.unwrap_or_else(|| Vec::with_capacity(self.shared.buffer_bytes))
    }

    /// Shares `buffer` as [`Bytes`]; the buffer returns to the pool when the last clone (or
    /// slice) of it is dropped.
    pub(crate) fn share(&self, buffer: Vec<u8>) -> Bytes {
        Bytes::from_owner(Lent {
            buffer,
            shared: Arc::clone(&self.shared),
        })
    }

    /// Takes `buffer` back for reuse (or frees it when enough are idle).
    pub(crate) fn give_back(&self, buffer: Vec<u8>) {
        self.shared.give_back(buffer);
    }
}

impl Shared {
    fn give_back(&self, mut buffer: Vec<u8>) {
        // Only buffers of the pool's size come back: one that grew for an unusually large
        // message, or shrank, is freed rather than kept around.
        if buffer.capacity() != self.buffer_bytes {
            return;
        }
        buffer.clear();
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        if idle.len() < self.keep {
            idle.push(buffer);
        }
    }
}

/// A buffer on loan to a [`Bytes`]; dropping it returns the buffer.
struct Lent {
    buffer: Vec<u8>,
    shared: Arc<Shared>,
}

impl AsRef<[u8]> for Lent {
    fn as_ref(&self) -> &[u8] {
        &self.buffer
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        self.shared.give_back(std::mem::take(&mut self.buffer));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn buffers_come_back_when_the_last_clone_drops() {
        let pool = BufferPool::new(64, 2);
        let mut buffer = pool.take();
        let address = buffer.as_ptr();
        buffer.extend_from_slice(b"hello");
        let shared = pool.share(buffer);
        let slice = shared.slice(1..3);
        drop(shared);
        assert_eq!(&slice[..], b"el");
        // Still lent out: a new buffer is allocated.
        let other = pool.take();
        assert!(other.as_ptr() != address);
        drop(other);
        drop(slice);
        let again = pool.take();
        assert_eq!((again.as_ptr(), again.len()), (address, 0));
    }

    #[test]
    fn keeps_a_bounded_number_of_idle_buffers_of_its_size() {
        let pool = BufferPool::new(64, 2);
        let buffers: Vec<Vec<u8>> = (0..4).map(|_| pool.take()).collect();
        for buffer in buffers {
            pool.give_back(buffer);
        }
        pool.give_back(Vec::with_capacity(1024));
        let idle = pool
            .shared
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        assert_eq!(
            idle.iter().map(Vec::capacity).collect::<Vec<_>>(),
            vec![64, 64]
        );
    }
}
