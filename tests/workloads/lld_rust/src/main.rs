//! No frame pointers (built with `-C force-frame-pointers=no`), linked by LLD (rust-lld by
//! default since Rust 1.90 on x86-64 Linux), which does not page-align the executable
//! segment in the file. main -> a -> b -> c, the hot loop in c.
//! Usage: lld_rust [SECONDS] (default 3).
use std::ptr;
use std::time::{Duration, Instant};

/// Each step reads h back from memory, so the optimizer cannot fold the loop.
#[inline(never)]
fn c(seed: u64) -> u64 {
    let mut h = seed;
    for i in 0..4_000_000u64 {
        h = unsafe { ptr::read_volatile(&h) }
            .wrapping_mul(6364136223846793005)
            .wrapping_add(i);
    }
    h
}

/// The work after each call keeps it from being a tail call.
#[inline(never)]
fn b(seed: u64) -> u64 {
    c(seed) ^ 1
}

#[inline(never)]
fn a(seed: u64) -> u64 {
    b(seed).rotate_left(7)
}

fn main() {
    let seconds = std::env::args().nth(1).and_then(|s| s.parse().ok()).unwrap_or(3.0);
    let end = Instant::now() + Duration::from_secs_f64(seconds);
    let mut h = 0u64;
    while Instant::now() < end {
        h = a(h);
    }
    println!("lld_rust done {}", h & 1);
}
