//! The whole batch: expand the plan, pick this shard's inputs, decide what a previous run
//! already did, process the rest in parallel, and keep the manifest current.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use rayon::prelude::*;
use sha2::{Digest, Sha256};

use super::execute::{self, effective_steps, file_name, Staged};
use super::fused::{self, InputRest};
use super::inputs::{self, key_of, Input};
use super::manifest::{
    self, decide, hash_file, hash_input_reporting, Decision, Entry, Identity, Manifest, Output,
    Status,
};
use super::plan::{Job, Plan};
use super::progress::{Active, Outcome, Progress};
use super::shard::Shard;
use super::staging::{self, Staging};
use super::template::Fields;
use super::BatchError;
use crate::security::Policy;
use ckpt_formats::torch::save::start_writeback;

/// How to run a plan.
#[derive(Clone, Debug)]
pub struct Options {
    /// The TOML plan; inputs and outputs are relative to its folder.
    pub plan: PathBuf,
    /// Inputs processed at once (at least 1).
    pub jobs: usize,
    /// Only this shard's inputs (`None`: all).
    pub shard: Option<Shard>,
    /// List what would be done; write nothing.
    pub dry_run: bool,
    /// Where the manifest goes; default `<plan stem>.manifest.json` beside the plan
    /// (`<plan stem>.manifest.<I>-of-<N>.json` for a shard).
    pub manifest: Option<PathBuf>,
    /// Which inputs may be rewritten at all (dangerous globals never are).
    pub policy: Policy,
}

/// What a run did.
#[derive(Clone, Debug, Default)]
pub struct Summary {
    /// Inputs of this shard.
    pub inputs: usize,
    /// Inputs processed now.
    pub done: usize,
    /// Inputs the manifest already had, unchanged.
    pub skipped: usize,
    /// `(input, error)` for each failure.
    pub failed: Vec<(String, String)>,
    /// Where the manifest was written.
    pub manifest: PathBuf,
}

/// The manifest path when none is given: `<plan stem>.manifest.json` beside the plan, or
/// `<plan stem>.manifest.<I>-of-<N>.json` for a shard.
pub fn default_manifest(plan: &Path, shard: Option<Shard>) -> PathBuf {
    let stem = plan
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "plan".into());
    let name = match shard {
        Some(s) => format!("{stem}.manifest.{}-of-{}.json", s.index(), s.count()),
        None => format!("{stem}.manifest.json"),
    };
    plan.with_file_name(name)
}

/// One input with everything needed to process it.
struct Task<'a> {
    input: &'a Input,
    job: &'a Job,
    output_dir: PathBuf,
    slot: String,
    policy: Policy,
}

/// Runs a plan. Dry runs write the expanded plan to `listing` and nothing anywhere else.
pub fn run(options: &Options, listing: &mut dyn Write) -> Result<Summary, BatchError> {
    let text = std::fs::read(&options.plan)
        .map_err(|e| io_error(&options.plan, "cannot read the plan", e))?;
    let plan_sha = manifest::hex(&Sha256::digest(&text));
    let plan = Plan::parse(&String::from_utf8_lossy(&text))?;
    let base = options
        .plan
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .canonicalize()
        .map_err(|e| io_error(&options.plan, "cannot resolve the plan's folder", e))?;

    let mut all = Vec::new();
    for (i, job) in plan.jobs.iter().enumerate() {
        let kind = if job.consolidates() {
            inputs::Kind::DcpFolders
        } else if job.only_exports_onnx() {
            inputs::Kind::Models
        } else {
            inputs::Kind::Files
        };
        all.extend(inputs::expand(i, &job.inputs, &base, kind)?);
    }
    check_collisions(&plan, &all, &base)?;
    let inputs_total = all.len();
    let selected: Vec<Input> = all
        .into_iter()
        .filter(|i| in_shard(options.shard, &i.key))
        .collect();
    let manifest_path = match &options.manifest {
        Some(p) => p.clone(),
        None => default_manifest(&options.plan, options.shard),
    };
    let previous = Manifest::load(&manifest_path)?;
    let tasks: Vec<Task<'_>> = selected
        .iter()
        .enumerate()
        .map(|(n, input)| Task {
            input,
            job: &plan.jobs[input.job],
            output_dir: base.join(&plan.jobs[input.job].output_dir),
            slot: n.to_string(),
            policy: options.policy,
        })
        .collect();

    if options.dry_run {
        return dry_run(&tasks, &base, previous.as_ref(), &manifest_path, listing);
    }

    let mut stagings: HashMap<PathBuf, Staging> = HashMap::new();
    for task in &tasks {
        if stagings.contains_key(&task.output_dir) {
            continue;
        }
        std::fs::create_dir_all(&task.output_dir)
            .map_err(|e| io_error(&task.output_dir, "cannot create the output folder", e))?;
        staging::sweep(&task.output_dir);
        let staging = Staging::create(&task.output_dir)
            .map_err(|e| io_error(&task.output_dir, "cannot create a staging folder", e))?;
        stagings.insert(task.output_dir.clone(), staging);
    }
    for stale in Manifest::stale_temporaries(&manifest_path) {
        let _ = std::fs::remove_file(stale);
    }

    let mut manifest = Manifest::new(
        &plan_sha,
        options.shard.map(|s| s.to_string()),
        inputs_total,
    );
    if let Some(previous) = &previous {
        for task in &tasks {
            if let Some(entry) = previous.entry(task.input.job, &task.input.key) {
                manifest.record(entry.clone());
            }
        }
    }
    manifest.save(&manifest_path)?;

    let total_bytes = tasks
        .iter()
        .map(|t| manifest::input_size(&t.input.path))
        .sum();
    let progress = Progress::new(tasks.len(), total_bytes);
    let state = Mutex::new((manifest, Instant::now()));
    let results = Mutex::new(Summary {
        inputs: tasks.len(),
        manifest: manifest_path.clone(),
        ..Summary::default()
    });
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(options.jobs.max(1))
        .build()
        .map_err(|e| BatchError::Io {
            what: "cannot start worker threads".into(),
            source: std::io::Error::other(e),
        })?;
    let save_error = Mutex::new(None);
    // Records a finished input: progress line, summary, manifest.
    let conclude = |entry: Entry, skipped: bool, active: Active| {
        let outcome = match (&entry.status, skipped) {
            (Status::Ok, true) => Outcome::Skipped,
            (Status::Ok, false) => Outcome::Done {
                seconds: entry.duration_ms as f64 / 1000.0,
            },
            (Status::Failed, _) => Outcome::Failed {
                error: entry.error.as_deref().unwrap_or("unknown error"),
            },
        };
        progress.finish(active, entry.size, outcome);
        if let Ok(mut summary) = results.lock() {
            match (&entry.status, skipped) {
                (Status::Ok, true) => summary.skipped += 1,
                (Status::Ok, false) => summary.done += 1,
                (Status::Failed, _) => summary
                    .failed
                    .push((entry.input.clone(), entry.error.clone().unwrap_or_default())),
            }
        }
        if let Ok(mut guard) = state.lock() {
            let (manifest, last_save) = &mut *guard;
            manifest.record(entry);
            // Rewriting a large manifest after every input would cost quadratic time;
            // a kill loses at most half a second of records, which resume redoes.
            if last_save.elapsed() >= Duration::from_millis(500) {
                if let Err(e) = manifest.save(&manifest_path) {
                    if let Ok(mut slot) = save_error.lock() {
                        *slot = Some(e);
                    }
                }
                *last_save = Instant::now();
            }
        }
    };
    // Workers hash and write; one committer thread makes their outputs durable and renames
    // them into place, in groups, so that no worker waits for the disk.
    std::thread::scope(|scope| {
        let (to_commit, commits) = std::sync::mpsc::channel::<(Pending, Active)>();
        let conclude = &conclude;
        let base = &base;
        scope.spawn(move || {
            while let Ok(first) = commits.recv() {
                let mut group = vec![first];
                group.extend(commits.try_iter());
                let (pendings, actives): (Vec<Pending>, Vec<Active>) = group.into_iter().unzip();
                for (entry, active) in publish_group(pendings, base).into_iter().zip(actives) {
                    conclude(entry, false, active);
                }
            }
        });
        // Hands a staged input whose hash is complete to the committer.
        let commit = |pending: Pending, active: Active| {
            if pending.entry.status == Status::Failed {
                let _ = std::fs::remove_dir_all(&pending.slot);
                return conclude(pending.entry, false, active);
            }
            if let Err(std::sync::mpsc::SendError((pending, active))) =
                to_commit.send((pending, active))
            {
                let _ = std::fs::remove_dir_all(&pending.slot);
                let mut entry = pending.entry;
                entry.status = Status::Failed;
                entry.error = Some("publish: the committer stopped".into());
                conclude(entry, false, active);
            }
        };
        // A staged input whose hash waits for another's to be finished with it.
        let parked = Mutex::new(None);
        pool.install(|| {
            tasks.par_iter().with_max_len(1).for_each(|task| {
                let active = progress.start(&task.input.key);
                let previous = previous
                    .as_ref()
                    .and_then(|m| m.entry(task.input.job, &task.input.key));
                let staging = &stagings[&task.output_dir];
                match process(task, base, previous, staging, &active) {
                    Processed::Done(entry, skipped) => conclude(entry, skipped, active),
                    Processed::Staged(pending) => {
                        for (pending, active) in finish_input_hash(&parked, *pending, active) {
                            commit(pending, active);
                        }
                    }
                }
            });
        });
        let last = parked.into_inner().unwrap_or_else(|e| e.into_inner());
        if let Some(last) = last {
            let (pending, active) = finish_alone(last);
            commit(pending, active);
        }
        drop(to_commit);
    });
    progress.close();
    drop(stagings);
    let (manifest, _) = state.into_inner().map_err(|_| poisoned())?;
    manifest.save(&manifest_path)?;
    if let Some(e) = save_error.into_inner().map_err(|_| poisoned())? {
        return Err(e);
    }
    let mut summary = results.into_inner().map_err(|_| poisoned())?;
    summary.failed.sort();
    Ok(summary)
}

fn in_shard(shard: Option<Shard>, key: &str) -> bool {
    shard.is_none_or(|s| s.contains(key))
}

fn poisoned() -> BatchError {
    BatchError::Io {
        what: "a worker thread panicked".into(),
        source: std::io::Error::other("poisoned lock"),
    }
}

fn io_error(path: &Path, what: &str, source: std::io::Error) -> BatchError {
    BatchError::Io {
        what: format!("{}: {what}", path.display()),
        source,
    }
}

/// Outputs an input would get: `(kind, path relative to the plan's folder)`.
fn planned_outputs(task: &Task<'_>, base: &Path, sha256: &str) -> (String, Vec<(String, String)>) {
    let name = task
        .input
        .path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let stem = task.job.name.expand(Fields {
        name: &name,
        sha256,
    });
    let outputs = effective_steps(&task.job.steps)
        .iter()
        .filter_map(|s| s.output())
        .map(|kind| {
            let path = task.output_dir.join(file_name(&stem, kind));
            (kind.name().to_owned(), key_of(&path, base))
        })
        .collect();
    (stem, outputs)
}

/// How a worker left an input.
enum Processed {
    /// Finished: its entry, and whether it was skipped as up to date.
    Done(Entry, bool),
    /// Its outputs are staged; they are published by the committer.
    Staged(Box<Pending>),
}

/// An input whose outputs wait in its staging slot to be made durable and renamed into place.
struct Pending {
    /// Its entry, `Ok` but without outputs yet.
    entry: Entry,
    staged: Vec<Staged>,
    slot: PathBuf,
    output_dir: PathBuf,
    /// The input's hash, still to be finished: until it is, the entry has no `sha256` and
    /// no `size`.
    input: Option<InputRest>,
}

/// What to hand to the committer after `pending` was staged: nothing while its input's
/// hash waits in `parked` for another input's; otherwise the inputs whose hashes are now
/// complete. Two unfinished hashes are finished together, side by side (the input bytes no
/// output holds are hashed two streams at a time, like the rest); an input whose hash
/// cannot be finished is marked failed.
fn finish_input_hash(
    parked: &Mutex<Option<Parked>>,
    mut pending: Pending,
    active: Active,
) -> Vec<(Pending, Active)> {
    let Some(rest) = pending.input.take() else {
        return vec![(pending, active)];
    };
    let mut slot = parked.lock().unwrap_or_else(|e| e.into_inner());
    let Some((mut other, other_rest, other_active)) = slot.take() else {
        *slot = Some((pending, rest, active));
        return Vec::new();
    };
    drop(slot);
    let started = Instant::now();
    other_active.step("hash");
    active.step("hash");
    let [hashed_other, hashed] =
        fused::finish_pair(other_rest, &|n| other_active.read(n), rest, &|n| {
            active.read(n)
        });
    record_input_hash(&mut other.entry, hashed_other, started.elapsed());
    record_input_hash(&mut pending.entry, hashed, started.elapsed());
    vec![(other, other_active), (pending, active)]
}

/// A staged input whose hash waits to be finished together with another's: the input, the
/// rest of its hash, its progress line.
type Parked = (Pending, InputRest, Active);

/// Finishes a parked input's hash alone.
fn finish_alone((mut pending, rest, active): Parked) -> (Pending, Active) {
    let started = Instant::now();
    active.step("hash");
    let hashed = rest.finish(&|n| active.read(n));
    record_input_hash(&mut pending.entry, hashed, started.elapsed());
    (pending, active)
}

/// Records an input's finished hash in its entry (which fails when it could not be read),
/// with the time it took.
fn record_input_hash(entry: &mut Entry, hashed: std::io::Result<(String, u64)>, took: Duration) {
    match hashed {
        Ok((sha256, size)) => {
            entry.sha256 = sha256;
            entry.size = size;
        }
        Err(e) => {
            entry.status = Status::Failed;
            entry.error = Some(format!("read: {e}"));
        }
    }
    let took = u64::try_from(took.as_millis()).unwrap_or(u64::MAX);
    entry.duration_ms = entry.duration_ms.saturating_add(took);
}

/// Processes one input up to its staged outputs (or decides it is up to date, or fails).
fn process(
    task: &Task<'_>,
    base: &Path,
    previous: Option<&Entry>,
    staging: &Staging,
    active: &Active,
) -> Processed {
    let on_step = |step: &'static str| active.step(step);
    let started = Instant::now();
    let job = task.job;
    let mut entry = Entry {
        job: task.input.job,
        input: task.input.key.clone(),
        sha256: String::new(),
        size: 0,
        steps: job.steps_source.clone(),
        status: Status::Failed,
        error: None,
        outputs: Vec::new(),
        duration_ms: 0,
        tool_version: manifest::TOOL_VERSION.into(),
    };
    let on_read = |n| active.read(n);
    // The input's hash is needed before any step when an earlier entry may let it be
    // skipped, or when it names the outputs; otherwise a step that reads the input may hash
    // it in the same pass (see `fused`), and the rest is hashed after the steps, paired with
    // another input's (see `finish_input_hash`).
    let hash_first = previous.is_some() || task.job.name.uses_hash() || task.input.path.is_dir();
    if hash_first {
        on_step("hash");
        match hash_input_reporting(&task.input.path, &on_read) {
            Ok((sha256, size)) => {
                entry.sha256 = sha256;
                entry.size = size;
            }
            Err(e) => {
                entry.error = Some(format!("read: {e}"));
                return Processed::Done(entry, false);
            }
        }
    }
    let (stem, outputs) = planned_outputs(task, base, &entry.sha256);
    if hash_first {
        let now = Identity {
            sha256: &entry.sha256,
            size: entry.size,
            steps: &job.steps_source,
            outputs: &outputs,
        };
        if decide(previous, &now, |p| hash_file(&base.join(p))) == Decision::Skip {
            if let Some(previous) = previous {
                return Processed::Done(previous.clone(), true);
            }
        }
    }
    let result = staging
        .slot(&task.slot)
        .map_err(|e| format!("staging: {e}"))
        .and_then(|slot| {
            let staged = execute::run(
                &task.input.path,
                &effective_steps(&job.steps),
                &slot,
                &stem,
                task.policy,
                &on_step,
                (!hash_first).then_some(&on_read as &dyn Fn(u64)),
            )
            .map_err(|e| e.to_string())
            .and_then(|ran| {
                // Unless hashed first, the input's hash is finished after the steps.
                let input = match ran.input {
                    _ if hash_first => None,
                    Some(rest) => Some(rest),
                    None => return Err("read: the input was not hashed".to_owned()),
                };
                Ok((ran.staged, input))
            });
            match staged {
                Ok((staged, input)) => Ok((staged, input, slot)),
                Err(e) => {
                    let _ = std::fs::remove_dir_all(&slot);
                    Err(e)
                }
            }
        });
    entry.duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    match result {
        Ok((staged, input, slot)) => {
            entry.status = Status::Ok;
            Processed::Staged(Box::new(Pending {
                entry,
                staged,
                slot,
                output_dir: task.output_dir.clone(),
                input,
            }))
        }
        Err(e) => {
            if !hash_first {
                // A failed input is still recorded with its hash when it can be read.
                if let Ok((sha256, size)) = hash_input_reporting(&task.input.path, &|_| {}) {
                    entry.sha256 = sha256;
                    entry.size = size;
                }
            }
            entry.error = Some(e);
            Processed::Done(entry, false)
        }
    }
}

/// Publishes a group of staged inputs: starts the write-back of every staged file, fsyncs
/// each (the group's I/O overlaps), renames each input's files into its output folder, then
/// fsyncs each output folder once. An output is renamed only once its bytes are on disk, and
/// every rename is on disk before the group's entries are returned. An input whose files
/// could not be made durable or renamed fails, its remaining files left in its slot (removed
/// with it).
fn publish_group(group: Vec<Pending>, base: &Path) -> Vec<Entry> {
    let mut opened = Vec::new();
    for pending in &group {
        let files: std::io::Result<Vec<std::fs::File>> = pending
            .staged
            .iter()
            .map(|f| std::fs::File::open(&f.path))
            .collect();
        if let Ok(files) = &files {
            files.iter().for_each(start_writeback);
        }
        opened.push(files);
    }
    let mut dirs: Vec<&Path> = Vec::new();
    let mut entries = Vec::new();
    for (pending, files) in group.iter().zip(opened) {
        let mut entry = pending.entry.clone();
        let published = files
            .and_then(|files| files.iter().try_for_each(|f| f.sync_all()))
            .and_then(|()| publish(&pending.staged, &pending.output_dir, base));
        match published {
            Ok(outputs) => {
                entry.outputs = outputs;
                if !dirs.contains(&pending.output_dir.as_path()) {
                    dirs.push(&pending.output_dir);
                }
            }
            Err(e) => {
                entry.status = Status::Failed;
                entry.error = Some(format!("publish: {e}"));
            }
        }
        let _ = std::fs::remove_dir_all(&pending.slot);
        entries.push(entry);
    }
    for dir in dirs {
        if let Ok(dir) = std::fs::File::open(dir) {
            // Makes the renames durable; failing here does not undo complete outputs.
            let _ = dir.sync_all();
        }
    }
    entries
}

/// Hashes the staged outputs (those their writer did not hash) and renames them into
/// `output_dir`, each rename atomic; the files are already durable. The caller fsyncs
/// `output_dir`.
fn publish(staged: &[Staged], output_dir: &Path, base: &Path) -> std::io::Result<Vec<Output>> {
    let mut outputs = Vec::new();
    for file in staged {
        let (sha256, size) = match &file.hash {
            Some(hashed) => hashed.clone(),
            None => hash_file(&file.path)?,
        };
        let name = file
            .path
            .file_name()
            .ok_or_else(|| std::io::Error::other("an output has no file name"))?;
        let target = output_dir.join(name);
        std::fs::rename(&file.path, &target)?;
        outputs.push(Output {
            kind: file.kind.to_owned(),
            path: key_of(&target, base),
            sha256,
            size,
        });
    }
    Ok(outputs)
}

/// Lists each input with its outputs and what a run would do.
fn dry_run(
    tasks: &[Task<'_>],
    base: &Path,
    previous: Option<&Manifest>,
    manifest_path: &Path,
    listing: &mut dyn Write,
) -> Result<Summary, BatchError> {
    let write_error = |e| BatchError::Io {
        what: "cannot print the plan".into(),
        source: e,
    };
    let mut summary = Summary {
        inputs: tasks.len(),
        manifest: manifest_path.to_owned(),
        ..Summary::default()
    };
    for task in tasks {
        let line = match hash_input_reporting(&task.input.path, &|_| {}) {
            Ok((sha256, size)) => {
                let (_, outputs) = planned_outputs(task, base, &sha256);
                let prev = previous.and_then(|m| m.entry(task.input.job, &task.input.key));
                let now = Identity {
                    sha256: &sha256,
                    size,
                    steps: &task.job.steps_source,
                    outputs: &outputs,
                };
                let action = match decide(prev, &now, |p| hash_file(&base.join(p))) {
                    Decision::Skip => {
                        summary.skipped += 1;
                        "skip (up to date)".to_owned()
                    }
                    Decision::Run(why) => {
                        summary.done += 1;
                        format!("run ({why})")
                    }
                };
                let targets: Vec<&str> = outputs.iter().map(|(_, p)| p.as_str()).collect();
                format!(
                    "job {} {} -> {} [{action}]",
                    task.input.job + 1,
                    task.input.key,
                    targets.join(", ")
                )
            }
            Err(e) => {
                summary.failed.push((task.input.key.clone(), e.to_string()));
                format!(
                    "job {} {} -> cannot read: {e}",
                    task.input.job + 1,
                    task.input.key
                )
            }
        };
        writeln!(listing, "{line}").map_err(write_error)?;
    }
    Ok(summary)
}

/// Refuses plans in which two inputs would write the same output file. Names that contain
/// `{sha8}` differ for different contents, so within a job they only meet for identical
/// inputs, whose outputs are identical too.
fn check_collisions(plan: &Plan, inputs: &[Input], base: &Path) -> Result<(), BatchError> {
    let mut claimed: HashMap<PathBuf, &Input> = HashMap::new();
    for input in inputs {
        let job = &plan.jobs[input.job];
        let name = input
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let stem = job.name.expand(Fields {
            name: &name,
            sha256: "{sha8}",
        });
        for kind in effective_steps(&job.steps)
            .iter()
            .filter_map(|s| s.output())
        {
            let path = base.join(&job.output_dir).join(file_name(&stem, kind));
            if let Some(other) = claimed.get(&path) {
                if other.job == input.job && job.name.uses_hash() {
                    continue;
                }
                return Err(BatchError::Plan {
                    what: format!(
                        "`{}` and `{}` would both write {}; add {{sha8}} or a distinct output_dir",
                        other.key,
                        input.key,
                        key_of(&path, base)
                    ),
                });
            }
            claimed.insert(path, input);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use sha2::{Digest, Sha256};

    fn fixtures() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
    }

    fn sha256_of(path: &Path) -> (String, u64) {
        let bytes = std::fs::read(path).expect("read");
        (manifest::hex(&Sha256::digest(&bytes)), bytes.len() as u64)
    }

    /// Runs `plan` over copies of `inputs` in a fresh folder; returns the folder and manifest.
    fn run_plan(plan: &str, inputs: &[&str]) -> (tempfile::TempDir, Manifest) {
        run_plan_on(plan, inputs, 2)
    }

    /// [`run_plan`] on `jobs` workers.
    fn run_plan_on(plan: &str, inputs: &[&str], jobs: usize) -> (tempfile::TempDir, Manifest) {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir(dir.path().join("in")).expect("mkdir");
        for name in inputs {
            std::fs::copy(fixtures().join(name), dir.path().join("in").join(name)).expect("copy");
        }
        std::fs::write(dir.path().join("plan.toml"), plan).expect("plan");
        let options = Options {
            plan: dir.path().join("plan.toml"),
            jobs,
            shard: None,
            dry_run: false,
            manifest: None,
            policy: Policy::SafeOnly,
        };
        let summary = run(&options, &mut std::io::sink()).expect("run");
        assert!(summary.failed.is_empty(), "{:?}", summary.failed);
        let manifest = Manifest::load(&summary.manifest)
            .expect("load")
            .expect("manifest");
        (dir, manifest)
    }

    /// Every recorded hash is the hash of the file, computed on its own.
    fn assert_hashes_match(dir: &Path, manifest: &Manifest) {
        assert!(!manifest.entries.is_empty());
        for entry in &manifest.entries {
            assert_eq!(entry.status, Status::Ok, "{entry:?}");
            assert_eq!(
                (entry.sha256.clone(), entry.size),
                sha256_of(&dir.join(&entry.input)),
                "input {}",
                entry.input
            );
            assert!(!entry.outputs.is_empty());
            for output in &entry.outputs {
                assert_eq!(
                    (output.sha256.clone(), output.size),
                    sha256_of(&dir.join(&output.path)),
                    "output {}",
                    output.path
                );
            }
        }
    }

    const TRAINING: [&str; 2] = ["cuda0_train_ckpt.pth", "legacy_train_ckpt.pth"];

    #[test]
    fn hashes_taken_while_writing_safetensors_are_the_files_hashes() {
        let plan = r#"[[job]]
inputs = ["in/*.pth"]
output_dir = "out"
steps = ["strip-module", { remap = "cpu" }, "drop-optimizer", "to-safetensors"]
"#;
        let (dir, manifest) = run_plan(plan, &TRAINING);
        assert_eq!(manifest.entries.len(), 2);
        assert_hashes_match(dir.path(), &manifest);
    }

    #[test]
    fn input_hashes_finished_in_pairs_or_alone_are_the_files_hashes() {
        // Five inputs whose hashes are finished after their steps: three left part-hashed by
        // the safetensors writer, two (a `format` job) not hashed at all. On one worker and
        // on two, pairs form in different ways and one hash is always finished alone.
        let plan = r#"[[job]]
inputs = ["in/*.pth"]
output_dir = "st"
steps = ["strip-module", "drop-optimizer", "to-safetensors"]

[[job]]
inputs = ["in/cuda*.pth"]
output_dir = "pth"
steps = [{ remap = "cpu" }]
"#;
        for jobs in [1, 2] {
            let inputs = [
                "cuda0_train_ckpt.pth",
                "legacy_train_ckpt.pth",
                "cuda3_zip.pth",
            ];
            let (dir, manifest) = run_plan_on(plan, &inputs, jobs);
            assert_eq!(manifest.entries.len(), 5);
            assert_hashes_match(dir.path(), &manifest);
        }
    }

    #[test]
    fn fused_output_is_byte_for_byte_what_to_safetensors_writes() {
        // A view that does not start its storage, shared storages, deflated records and
        // legacy files: some tensors take the fallback; the file must not change either way.
        let inputs = [
            "zip_dataparallel_sd.pth",
            "mixed_cuda_zip.pth",
            "zip_deflated.pth",
            "zip_tinycnn_sd.pth",
            "legacy_tinycnn_sd.pth",
        ];
        let plan = r#"[[job]]
inputs = ["in/*.pth"]
output_dir = "out"
steps = ["to-safetensors"]
"#;
        let (dir, manifest) = run_plan(plan, &inputs);
        assert_eq!(manifest.entries.len(), inputs.len());
        assert_hashes_match(dir.path(), &manifest);
        for name in inputs {
            let mut opened = crate::open(&fixtures().join(name)).expect("open");
            let reference = dir.path().join("reference.safetensors");
            crate::safetensors::export(&mut opened.checkpoint, None, &reference).expect("export");
            let stem = name.trim_end_matches(".pth");
            let ours = dir.path().join("out").join(format!("{stem}.safetensors"));
            assert_eq!(
                split_safetensors(&std::fs::read(&ours).expect("ours")),
                split_safetensors(&std::fs::read(&reference).expect("reference")),
                "{name}"
            );
        }
    }

    /// A safetensors file as its header (parsed: the metadata map's order varies from one
    /// write to the next) and its data bytes.
    fn split_safetensors(bytes: &[u8]) -> (serde_json::Value, Vec<u8>) {
        let len = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")) as usize;
        let header = serde_json::from_slice(&bytes[8..8 + len]).expect("header");
        (header, bytes[8 + len..].to_vec())
    }

    #[test]
    fn a_failed_publish_fails_only_its_input_and_leaves_nothing_partial() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::create_dir_all(dir.path().join("in")).expect("mkdir");
        for name in TRAINING {
            std::fs::copy(fixtures().join(name), dir.path().join("in").join(name)).expect("copy");
        }
        // A folder where one output goes: its rename fails.
        std::fs::create_dir_all(dir.path().join("out/cuda0_train_ckpt.safetensors/x"))
            .expect("blocker");
        let plan = r#"[[job]]
inputs = ["in/*.pth"]
output_dir = "out"
steps = ["strip-module", "drop-optimizer", "to-safetensors"]
"#;
        std::fs::write(dir.path().join("plan.toml"), plan).expect("plan");
        let options = Options {
            plan: dir.path().join("plan.toml"),
            jobs: 2,
            shard: None,
            dry_run: false,
            manifest: None,
            policy: Policy::SafeOnly,
        };
        let summary = run(&options, &mut std::io::sink()).expect("run");
        assert_eq!(summary.done, 1);
        assert_eq!(summary.failed.len(), 1);
        assert!(
            summary.failed[0].1.starts_with("publish:"),
            "{:?}",
            summary.failed
        );
        let manifest = Manifest::load(&summary.manifest)
            .expect("load")
            .expect("manifest");
        let failed = manifest
            .entries
            .iter()
            .find(|e| e.status == Status::Failed)
            .expect("failed entry");
        assert!(failed.outputs.is_empty());
        assert_eq!(
            (failed.sha256.clone(), failed.size),
            sha256_of(&dir.path().join(&failed.input))
        );
        let ok: Vec<&Entry> = manifest
            .entries
            .iter()
            .filter(|e| e.status == Status::Ok)
            .collect();
        assert_eq!(ok.len(), 1);
        let left: Vec<String> = std::fs::read_dir(dir.path().join("out"))
            .expect("out")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        let mut left = left;
        left.sort();
        assert_eq!(
            left,
            [
                "cuda0_train_ckpt.safetensors",
                "legacy_train_ckpt.safetensors"
            ],
            "no staging folder or temporary file is left"
        );
        assert!(dir
            .path()
            .join("out/cuda0_train_ckpt.safetensors/x")
            .is_dir());
    }

    #[test]
    fn hashes_are_right_where_the_input_is_hashed_first_or_after() {
        // `{sha8}` names need the hash before any step; a checkpoint output and a dtype cast
        // are hashed on their own passes; a rerun over an earlier manifest hashes first to
        // decide what to skip.
        let plan = r#"[[job]]
inputs = ["in/*.pth"]
output_dir = "named"
name = "{stem}-{sha8}"
steps = ["strip-module", "drop-optimizer", "to-safetensors"]

[[job]]
inputs = ["in/*.pth"]
output_dir = "both"
steps = ["strip-module", "drop-optimizer", "format", "to-safetensors"]

[[job]]
inputs = ["in/*.pth"]
output_dir = "cast"
steps = ["drop-optimizer", { dtype = "float16" }, "to-safetensors"]
"#;
        let (dir, manifest) = run_plan(plan, &TRAINING);
        assert_eq!(manifest.entries.len(), 6);
        assert_hashes_match(dir.path(), &manifest);
        let options = Options {
            plan: dir.path().join("plan.toml"),
            jobs: 1,
            shard: None,
            dry_run: false,
            manifest: None,
            policy: Policy::SafeOnly,
        };
        std::fs::write(
            dir.path().join("both/cuda0_train_ckpt.safetensors"),
            b"changed",
        )
        .expect("spoil");
        let summary = run(&options, &mut std::io::sink()).expect("rerun");
        assert_eq!((summary.skipped, summary.done), (5, 1));
        let again = Manifest::load(&summary.manifest)
            .expect("load")
            .expect("manifest");
        assert_hashes_match(dir.path(), &again);
    }
}
