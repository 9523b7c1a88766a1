//! Fuzz the daemons' frame readers (`net/src/transport.rs`) with slow and partial
//! frames: the bytes a client or an execd sends, handed over in the pieces the input
//! chooses, with a pending read between every two, as a slow, stalled or cut-off peer
//! would hand them.
//!
//! For any input, reading must return (never panic, never hang on bytes that will not
//! come), and while it reads, the memory it holds must stay within three times what
//! the peer actually sent plus one first chunk (a buffer doubled as bytes came, the old
//! and the new one for a moment): a frame announced large and not sent holds
//! nothing like its announced size (measured per read; decoding, which is not the
//! reader's, is left out). The reads are those the daemons make: a client's hello (at
//! most 4 KiB) then its request, as the master's and an execd's client socket read
//! them; an execd's first message (at most 64 KiB) then session frames, as the master
//! reads a QUIC control stream.
//!
//! Input: the first byte says how many piece sizes follow (1 to 16), then the sizes
//! (0 read as 1), then the peer's bytes.
//!
//! Run from the repository root: `RUSTC_BOOTSTRAP=1 cargo fuzz run -s none frame_read
//! /tmp/frame-corpus fuzz/corpus/frame_read`.

#![no_main]

use std::alloc::{GlobalAlloc, Layout, System};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Poll};

use gantry_net::transport::{read_frame_bytes, read_frame_bytes_max, read_hello};
use gantry_proto::{FromExecd, ToMaster, PROTOCOL_VERSION};
use libfuzzer_sys::fuzz_target;
use tokio::io::{AsyncRead, ReadBuf};

/// The system allocator, counting the bytes held now and the most held since reset.
struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = HELD.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        unsafe { System.dealloc(p, layout) };
        HELD.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// A peer that sends `data` in pieces of `sizes` (in turn), pending between pieces.
struct Trickle<'a> {
    data: &'a [u8],
    sizes: &'a [u8],
    next: usize,
    pending: bool,
}

impl AsyncRead for Trickle<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.pending {
            self.pending = false;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        self.pending = true;
        let size = usize::from(self.sizes[self.next % self.sizes.len()].max(1));
        self.next += 1;
        let n = size.min(self.data.len()).min(buf.remaining());
        let (piece, rest) = self.data.split_at(n);
        buf.put_slice(piece);
        self.data = rest;
        Poll::Ready(Ok(()))
    }
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .expect("a runtime")
    })
}

/// What reading a frame may hold beyond what was sent: its first chunk (64 KiB) and the
/// runtime's own small allocations.
const SLACK: usize = 96 * 1024;

/// Run one read, checking that what it held at most stays within `3 * sent + SLACK` (a
/// buffer doubled as bytes came: the old one and the new one for a moment).
async fn measured<T>(sent: usize, read: impl std::future::Future<Output = T>) -> T {
    let base = HELD.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let out = read.await;
    let peak = PEAK.load(Ordering::Relaxed).saturating_sub(base);
    assert!(
        peak <= 3 * sent + SLACK,
        "reading from {sent} bytes held {peak} bytes at most"
    );
    out
}

fuzz_target!(|input: &[u8]| {
    let Some((&count, rest)) = input.split_first() else {
        return;
    };
    let count = usize::from(count % 16) + 1;
    if rest.len() < count {
        return;
    }
    let (sizes, data) = rest.split_at(count);
    let rt = runtime();
    let trickle = || Trickle {
        data,
        sizes,
        next: 0,
        pending: false,
    };
    let sent = data.len();
    rt.block_on(async {
        // A client, as a daemon's client socket reads it (the request decoded apart:
        // decoding is not the reader's, and serde may reserve ahead of what it got).
        let mut r = trickle();
        let mut w = tokio::io::sink();
        let hello = measured(
            sent,
            read_hello(&mut r, &mut w, PROTOCOL_VERSION, "the fuzzer"),
        )
        .await;
        if hello.is_ok() {
            if let Ok(Some(bytes)) = measured(sent, read_frame_bytes(&mut r)).await {
                let _ = gantry_proto::decode::<ToMaster>(&bytes);
            }
        }
        // An execd, as the master reads its control stream.
        let mut r = trickle();
        let first = measured(sent, read_frame_bytes_max(&mut r, 64 * 1024)).await;
        if let Ok(Some(bytes)) = first {
            let _ = gantry_proto::decode::<FromExecd>(&bytes);
            while let Ok(Some(bytes)) = measured(sent, read_frame_bytes(&mut r)).await {
                assert!(bytes.len() <= sent);
                let _ = gantry_proto::decode::<FromExecd>(&bytes);
            }
        }
    });
});
