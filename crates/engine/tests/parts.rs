//! Checkpoints of a distributed run (ranks as threads): every rank writes its part, rank 0 the
//! manifest; stopping and resuming on the same ranks ends where the uninterrupted one-process
//! run ends, bit for bit; another number of ranks is refused with a clear error; old parts are
//! deleted once the manifest names the new ones.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use sgmcmc_engine::checkpoint_parts::{Manifest, part_path, read_part};
use sgmcmc_engine::{Checkpoints, Repeat, Run};
use sgmcmc_samplers::comm::{ChainLayout, Communicator, Placement, ThreadGroup};
use sgmcmc_samplers::ensemble::HostEnsemble;
use sgmcmc_samplers::registry::{AnySampler, BuildContext, SamplerSettings};
use sgmcmc_samplers::sampler::Sampler;
use sgmcmc_testfunctions::by_name;

const CHAINS: usize = 4;
const STEPS: u64 = 600;

fn sampler(placement: Placement) -> AnySampler<HostEnsemble> {
    let mut s = SamplerSettings::named("resgld");
    s.lr = 0.03;
    s.replica.temperatures = vec![1.0, 2.0, 4.0, 8.0];
    let spec = s.spec(&BuildContext::steps(STEPS).chains(CHAINS)).unwrap();
    let here = placement.here();
    let starts: Vec<Vec<f64>> = (0..CHAINS).map(|c| vec![c as f64 - 1.5]).collect();
    let target = by_name("mixture-resgld-1").unwrap();
    let ens = HostEnsemble::new_part(target, &starts[here.clone()], 4, here.start).unwrap();
    spec.build_placed(ens, 4, placement).unwrap()
}

/// Runs every rank of `ranks` on a thread with `body(placement, comm)`.
fn on_ranks<T: Send>(
    ranks: usize,
    body: impl Fn(Placement, Arc<dyn Communicator>) -> T + Sync,
) -> Vec<T> {
    let layout = ChainLayout::even(CHAINS, ranks).unwrap();
    std::thread::scope(|s| {
        let handles: Vec<_> = ThreadGroup::new(ranks)
            .into_iter()
            .map(|g| {
                let comm: Arc<dyn Communicator> = Arc::new(g);
                let placement = Placement::new(Arc::clone(&comm), layout.clone()).unwrap();
                let body = &body;
                s.spawn(move || body(placement, comm))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    })
}

fn parts_on_disk(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".rank-"))
        .collect();
    v.sort();
    v
}

#[test]
fn ranks_checkpoint_their_parts_and_resume_to_the_one_process_result() {
    let dir = std::env::temp_dir().join(format!("sgmcmc-parts-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path: PathBuf = dir.join("checkpoint.cbor");

    let mut whole = sampler(Placement::local(CHAINS));
    Run::steps(STEPS).run(&mut whole, &mut Repeat(())).unwrap();

    // Two ranks stop at step 250 (checkpoints at 100, 200 and 250).
    on_ranks(2, |placement, comm| {
        let mut s = sampler(placement);
        Run::steps(STEPS)
            .checkpoints(Checkpoints::new(&path, 100).over_ranks(comm))
            .stop_after(250)
            .run(&mut s, &mut Repeat(()))
            .unwrap();
    });
    let m: Manifest = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(
        (m.ranks, m.chains.clone(), m.next_step),
        (2, vec![2, 2], 250)
    );
    let expected = [part_path(&path, 0, 250), part_path(&path, 1, 250)];
    let names: Vec<String> = expected
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    assert_eq!(parts_on_disk(&dir), names, "the step-200 parts are gone");

    // Another number of ranks is refused on every rank, before anything runs.
    let refused = on_ranks(4, |_, comm| {
        read_part(&path, comm.as_ref()).err().map(|e| e.to_string())
    });
    for e in refused {
        let e = e.expect("refused");
        assert!(e.contains("written by 2 ranks and this run has 4"), "{e}");
    }

    // The same two ranks resume to the end: the one-process run's positions and swaps.
    let finals = on_ranks(2, |placement, comm| {
        let (c, part, m) = read_part(&path, comm.as_ref()).unwrap();
        m.check_chains(&path, placement.layout().counts()).unwrap();
        assert!(m.check_chains(&path, &[3, 1]).is_err());
        let mut s = sampler(placement);
        Run::steps(STEPS)
            .checkpoints(Checkpoints::new(&path, 100).over_ranks(comm))
            .resume_part(c, part)
            .run(&mut s, &mut Repeat(()))
            .unwrap();
        let r = s.as_replica().unwrap();
        (
            s.ensemble().positions().to_vec(),
            r.stats().accepts.clone(),
            r.index().rungs().to_vec(),
        )
    });
    let w = whole.as_replica().unwrap();
    let all: Vec<f64> = finals.iter().flat_map(|f| f.0.clone()).collect();
    assert_eq!(all, whole.ensemble().positions());
    for f in &finals {
        assert_eq!(
            (&f.1, &f.2),
            (&w.stats().accepts, &w.index().rungs().to_vec())
        );
    }
    assert_eq!(parts_on_disk(&dir).len(), 2, "{:?}", parts_on_disk(&dir));
    std::fs::remove_dir_all(&dir).unwrap();
}
