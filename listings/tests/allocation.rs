//! The memory claims of Part I as deterministic tests: this test binary
//! counts every allocation through its own global allocator, so the counts
//! are exact and no clock is read. The recurrent form holds a fixed state
//! whatever N is; the parallel form builds an N × N matrix.
//!
//! The tests of one binary run on several threads at once, beside the test
//! harness's own thread: only the thread inside `usage` is counted, and
//! each test takes `SERIAL` first, so no other thread's allocations land
//! in a count.

use listings::fast::{
    KvCacheF32, LinearStateF32, linear_attention_chunkwise_f32,
    linear_attention_recurrent_f32, random_inputs, softmax_attention_tiled_f32,
    to_f32,
};
use listings::m3::cost::softmax_attention_tiled;
use listings::m3::delete_softmax::{
    linear_attention_memory_first, linear_attention_scores_first,
};
use listings::m3::fast_weight_memory::{
    linear_attention_parallel, linear_attention_recurrent,
};
use listings::m3::schedules::linear_attention_backward;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};

/// The system allocator, counting calls and bytes live.
struct Counting;

static CALLS: AtomicUsize = AtomicUsize::new(0);
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Whether this thread's allocations are being counted.
    static COUNTING: Cell<bool> = const { Cell::new(false) };
}

fn counting() -> bool {
    COUNTING.try_with(Cell::get).unwrap_or(false)
}

fn grew(bytes: usize) {
    if !counting() {
        return;
    }
    CALLS.fetch_add(1, Relaxed);
    let live = LIVE.fetch_add(bytes, Relaxed) + bytes;
    PEAK.fetch_max(live, Relaxed);
}

fn shrank(bytes: usize) {
    if counting() {
        LIVE.fetch_sub(bytes, Relaxed);
    }
}

// SAFETY: every call is passed on to `System` unchanged; the counters only
// observe it.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        shrank(layout.size());
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(
        &self,
        ptr: *mut u8,
        layout: Layout,
        new_size: usize,
    ) -> *mut u8 {
        shrank(layout.size());
        grew(new_size);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

static SERIAL: Mutex<()> = Mutex::new(());

/// What one call allocated: calls, and the peak of bytes live above what
/// was live when it started.
#[derive(Debug, Clone, Copy)]
struct Usage {
    calls: usize,
    peak_extra: usize,
}

/// Run `f` (its inputs made beforehand) and count what it allocates.
fn usage<R>(f: impl FnOnce() -> R) -> Usage {
    // Bytes freed here that were allocated before would count as negative:
    // LIVE starts high enough that it never wraps, and PEAK is read above it.
    let before = usize::MAX / 2;
    LIVE.store(before, Relaxed);
    PEAK.store(before, Relaxed);
    CALLS.store(0, Relaxed);
    COUNTING.with(|c| c.set(true));
    let result = f();
    COUNTING.with(|c| c.set(false));
    let usage = Usage {
        calls: CALLS.load(Relaxed),
        peak_extra: PEAK.load(Relaxed) - before,
    };
    drop(result);
    usage
}

const FLOAT: usize = std::mem::size_of::<f32>();

/// Run `f` once, uncounted. The f32 matrix products (the `gemm` crate)
/// make a packing workspace on a thread's first product and keep it for
/// the thread's life; a test of how memory grows with N makes it first,
/// so that a one-time buffer does not read as memory that depends on N.
fn keep_workspace<R>(f: impl FnOnce() -> R) {
    drop(f());
}

#[test]
fn recurrent_form_allocates_nothing_per_token() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for (seed, d, m) in [(0, 16, 8), (10, 5, 3), (11, 64, 64)] {
        recurrent_allocations(seed, d, m);
    }
}

fn recurrent_allocations(seed: u64, d: usize, m: usize) {
    let mut seen = Vec::new();
    for n in [64, 256, 1024, 4096] {
        let [q, k, v] = random_inputs(seed, n, d, m).map(|a| to_f32(&a));
        let used = usage(|| linear_attention_recurrent_f32(&q, &k, &v));
        seen.push((n, used));
    }
    // The same number of allocations at every N: none inside the loop.
    let calls = seen[0].1.calls;
    assert!(seen.iter().all(|(_, u)| u.calls == calls), "{seen:?}");
    // Beyond the output O: (N, m), the same bytes at every N: the state S,
    // z and the scratch rows.
    let state: Vec<usize> = seen
        .iter()
        .map(|(n, u)| u.peak_extra - n * m * FLOAT)
        .collect();
    assert!(state.iter().all(|&s| s == state[0]), "{seen:?}");
    assert!(state[0] <= 4 * (m * d + 3 * d) * FLOAT, "{seen:?}");
}

#[test]
fn chunkwise_form_peak_memory_does_not_grow_with_n() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for (seed, d, m, chunk) in [(1, 16, 8, 32), (12, 5, 3, 7), (13, 64, 32, 64)]
    {
        let [q, k, v] = random_inputs(seed, 256, d, m).map(|a| to_f32(&a));
        keep_workspace(|| linear_attention_chunkwise_f32(&q, &k, &v, chunk));
        let extra: Vec<(usize, usize)> = [256, 1024, 4096]
            .into_iter()
            .map(|n| {
                let [q, k, v] =
                    random_inputs(seed, n, d, m).map(|a| to_f32(&a));
                let used =
                    usage(|| linear_attention_chunkwise_f32(&q, &k, &v, chunk));
                (n, used.peak_extra - n * m * FLOAT)
            })
            .collect();
        assert!(extra.iter().all(|&(_, e)| e == extra[0].1), "{extra:?}");
    }
}

#[test]
fn parallel_form_peak_memory_grows_as_n_squared() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for (seed, d, m) in [(2, 8, 8), (18, 4, 12), (19, 16, 4)] {
        parallel_peaks(seed, d, m);
    }
}

fn parallel_peaks(seed: u64, d: usize, m: usize) {
    let peak = |n: usize| {
        let [q, k, v] = random_inputs(seed, n, d, m);
        usage(|| linear_attention_parallel(&q, &k, &v)).peak_extra
    };
    let peaks: Vec<(usize, usize)> = [512, 1024, 2048]
        .into_iter()
        .map(|n| (n, peak(n)))
        .collect();
    for pair in peaks.windows(2) {
        let [(n, small), (_, large)] = [pair[0], pair[1]];
        let ratio = large as f64 / small as f64;
        // Exactly 4 for the N × N scores alone; the O(N) buffers beside
        // them, and matrixmultiply's packing buffers, whose size does not
        // depend on N, pull the ratio a little below 4.
        assert!((3.7..=4.0).contains(&ratio), "N {n}: ratio {ratio}");
        let scores = n * n * std::mem::size_of::<f64>();
        assert!(small >= scores, "N {n}: the scores are held at once");
    }
}

#[test]
fn book_recurrence_allocates_per_token_yet_holds_a_fixed_state() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for (seed, d, m) in [(3, 16, 8), (14, 5, 3), (15, 32, 64)] {
        book_recurrence_allocations(seed, d, m);
    }
}

fn book_recurrence_allocations(seed: u64, d: usize, m: usize) {
    let seen: Vec<(usize, Usage)> = [256, 1024]
        .into_iter()
        .map(|n| {
            let [q, k, v] = random_inputs(seed, n, d, m);
            (n, usage(|| linear_attention_recurrent(&q, &k, &v)))
        })
        .collect();
    let [(n1, u1), (n2, u2)] = [seen[0], seen[1]];
    // Its temporaries (the outer product, the read) come and go each
    // token: the count of calls grows with N, the bytes held do not.
    assert!(u2.calls - u1.calls >= n2 - n1, "{seen:?}");
    let float = std::mem::size_of::<f64>();
    let state = |n: usize, u: Usage| u.peak_extra - n * m * float;
    assert_eq!(state(n1, u1), state(n2, u2), "{seen:?}");
}

#[test]
fn book_delta_rule_allocates_every_token() {
    // Part II's f64 recurrence, which the bench times for reference: its
    // normalised keys and queries and its reads are new arrays each token.
    use listings::ndarray::Array1;
    use listings::paper::delta_rule::delta_rule_recurrent;
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for (d, m) in [(4, 3), (16, 8)] {
        let calls: Vec<(usize, usize)> = [64, 256]
            .into_iter()
            .map(|n| {
                let [q, k, v] = random_inputs(9, n, d, m);
                let beta = Array1::from_elem(n, 0.5);
                let used = usage(|| delta_rule_recurrent(&q, &k, &v, &beta));
                (n, used.calls)
            })
            .collect();
        let [(n1, c1), (n2, c2)] = [calls[0], calls[1]];
        assert!(c2 - c1 >= n2 - n1, "d {d}, m {m}: {calls:?}");
    }
}

#[test]
fn tiled_softmax_peak_memory_grows_linearly_in_n() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    // The f32 form: beyond its output O: (N, m) and its scaled copy of Q:
    // (N, d), the same bytes at every N (one block of scores and the
    // matrix products' packing buffers), far below N × N scores.
    for (seed, d, m) in [(4, 16, 8), (16, 5, 3), (17, 64, 32)] {
        let [q, k, v] = random_inputs(seed, 1024, d, m).map(|a| to_f32(&a));
        keep_workspace(|| softmax_attention_tiled_f32(&q, &k, &v));
        let extra: Vec<(usize, usize)> = [1024, 2048, 4096, 8192]
            .into_iter()
            .map(|n| {
                let [q, k, v] =
                    random_inputs(seed, n, d, m).map(|a| to_f32(&a));
                let used = usage(|| softmax_attention_tiled_f32(&q, &k, &v));
                (n, used.peak_extra - n * (m + d) * FLOAT)
            })
            .collect();
        assert!(extra.iter().all(|&(_, e)| e == extra[0].1), "{extra:?}");
        assert!(extra[0].1 < 1024 * 1024 * FLOAT / 4, "{extra:?}");
    }
    let (d, m) = (16, 8);
    // The f64 teaching form: beyond O, its temporaries are blocks.
    let float = std::mem::size_of::<f64>();
    let extra: Vec<(usize, usize)> = [512, 1024, 2048]
        .into_iter()
        .map(|n| {
            let [q, k, v] = random_inputs(5, n, d, m);
            let used = usage(|| softmax_attention_tiled(&q, &k, &v, 64));
            (n, used.peak_extra - n * m * float)
        })
        .collect();
    assert!(extra.iter().all(|&(_, e)| e == extra[0].1), "{extra:?}");
    assert!(extra[0].1 < 512 * 512 * float / 4, "{extra:?}");
}

#[test]
fn decode_steps_allocate_nothing_once_their_memory_is_reserved() {
    // The KV cache made with room for every token, and the state, then
    // step after step: no allocation at all, at several widths and lengths.
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for (seed, d, m, n) in [(6, 4, 3, 10), (7, 16, 8, 200), (8, 64, 64, 300)] {
        let [q, k, v] = random_inputs(seed, n, d, m).map(|a| to_f32(&a));
        let rows = |a: &listings::ndarray::Array2<f32>| -> Vec<Vec<f32>> {
            a.rows().into_iter().map(|r| r.to_vec()).collect()
        };
        let (q, k, v) = (rows(&q), rows(&k), rows(&v));
        let mut cache = KvCacheF32::new(d, m, n);
        let mut state = LinearStateF32::new(d, m);
        let mut out = vec![0.0f32; m];
        let used = usage(|| {
            for t in 0..n {
                cache.step(&q[t], &k[t], &v[t], &mut out).unwrap();
                state.step(&q[t], &k[t], &v[t], &mut out).unwrap();
            }
        });
        assert_eq!(used.calls, 0, "d {d}, m {m}, N {n}: {used:?}");
        assert_eq!(cache.len(), n);
    }
}

#[test]
fn backward_pass_holds_a_fixed_state_whatever_n() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let (d, m) = (16, 8);
    let float = std::mem::size_of::<f64>();
    let extra: Vec<(usize, usize)> = [256, 1024, 4096]
        .into_iter()
        .map(|n| {
            let [q, k, v] = random_inputs(4, n, d, m);
            let g = random_inputs(5, n, d, m)[2].clone();
            let used = usage(|| linear_attention_backward(&q, &k, &v, &g));
            // Beyond the gradients it returns, (N, d) twice and (N, m):
            (n, used.peak_extra - n * (2 * d + m) * float)
        })
        .collect();
    assert!(extra.iter().all(|&(_, e)| e == extra[0].1), "{extra:?}");
    // S, z, R, r and a few rows: a handful of (m, d) matrices.
    assert!(extra[0].1 <= 8 * (m * d + 4 * d) * float, "{extra:?}");
}

#[test]
fn retrieval_trainer_allocates_nothing_per_episode_but_a_gram_buffer() {
    // The fast trainer's step allocates the same number of times for 4
    // episodes as for 16, for softmax, the sum rule and the fwm rule's
    // explicit memory: nothing inside the loop over a batch's episodes.
    use listings::paper::retrieval::model::{
        FwmPhi, Layer, Params, Phi, Rule, Shape,
    };
    use listings::paper::retrieval::task::{Setting, episodes};
    use listings::paper::retrieval::train::Budget;
    use listings::random::seeded;
    use listings::trainers::retrieval::Fast;
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for layer in [
        Layer::Softmax,
        Layer::Linear(Phi::Dpfp(1), Rule::Sum),
        Layer::Linear(Phi::Dpfp(1), Rule::Delta),
        Layer::Fwm(FwmPhi::Map(Phi::Dpfp(1))),
        Layer::Fwm(FwmPhi::Tanh),
    ] {
        let shape = Shape::paper(6, 4);
        let params = Params::init(&mut seeded(0), shape, layer);
        let budget = Budget {
            batch: 16,
            ..Budget::paper()
        };
        let mut fast = Fast::new(layer, Setting::Repeated, &params, budget);
        let eps =
            episodes(1, 16, 6, Setting::Repeated).expect("n is at least one");
        fast.gradient(&eps[..1]).unwrap(); // warm up
        let calls = |b: usize, fast: &mut Fast| {
            usage(|| fast.gradient(&eps[..b]).unwrap()).calls
        };
        let (few, many) = (calls(4, &mut fast), calls(16, &mut fast));
        // The delta rule's one matrix product per episode, its Gram matrix,
        // takes a packing buffer from matrixmultiply: one call each.
        let per_episode = match layer {
            Layer::Linear(_, Rule::Delta) => 1,
            _ => 0,
        };
        assert_eq!(many - few, 12 * per_episode, "{}", layer.name());
    }
}

#[test]
fn memory_first_never_allocates_n_by_n_and_scores_first_does() {
    // Chapter "Delete the softmax": memory first, Φ_Q (Φ_Kᵀ V), holds
    // buffers of N rows and the (m, p) memory, so its peak grows in
    // proportion to N (doubling N at most doubles it) and stays far below
    // one N × N matrix; scores first holds the N × N scores (doubling N
    // multiplies its peak by nearly 4).
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let float = std::mem::size_of::<f64>();
    for (seed, d, m) in [(6, 8, 8), (20, 16, 4), (21, 4, 12)] {
        let peaks = |form: &dyn Fn(usize) -> usize| -> Vec<(usize, usize)> {
            [512, 1024, 2048]
                .into_iter()
                .map(|n| (n, form(n)))
                .collect()
        };
        let inputs = |n| {
            // Positive features, as both forms require.
            random_inputs(seed, n, d, m).map(|a| a.mapv(|x| x.abs() + 0.1))
        };
        let memory_first = peaks(&|n| {
            let [q, k, v] = inputs(n);
            let used = usage(|| linear_attention_memory_first(&q, &k, &v));
            used.peak_extra
        });
        let scores_first = peaks(&|n| {
            let [q, k, v] = inputs(n);
            let used = usage(|| linear_attention_scores_first(&q, &k, &v));
            used.peak_extra
        });
        for pair in memory_first.windows(2) {
            let [(n, small), (_, large)] = [pair[0], pair[1]];
            assert!(large <= 2 * small, "N {n}: {memory_first:?}");
            assert!(small < n * n * float / 16, "N {n}: {memory_first:?}");
        }
        for pair in scores_first.windows(2) {
            let [(n, small), (_, large)] = [pair[0], pair[1]];
            let ratio = large as f64 / small as f64;
            assert!(ratio > 3.5, "N {n}: {scores_first:?}");
            assert!(small >= n * n * float, "N {n}: {scores_first:?}");
        }
    }
}
