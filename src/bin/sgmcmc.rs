//! The `sgmcmc` binary.

fn main() {
    keep_freed_memory();
    std::process::exit(sgmcmc_apps::run_with(
        std::env::args_os(),
        &[sgmcmc_bench::command()],
    ));
}

/// glibc hands large freed blocks back to the kernel (`munmap`, heap trimming), so a training
/// step's fresh activation and gradient buffers (megabytes each) fault in zeroed pages on every
/// step: about 15% of a ResNet20 step's CPU time on flex, as system time. Keeping freed memory
/// in the heap (blocks up to 32 MiB from the heap, no trimming below 1 GiB, 64 MiB grown at a
/// time) removes that without raising the peak resident memory. A library user can do the same
/// with glibc's `MALLOC_MMAP_THRESHOLD_`, `MALLOC_TRIM_THRESHOLD_` and `MALLOC_TOP_PAD_`.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn keep_freed_memory() {
    // SAFETY: `mallopt` only sets allocator parameters; called before any other thread starts.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 1 << 30);
        libc::mallopt(libc::M_TOP_PAD, 64 << 20);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn keep_freed_memory() {}
