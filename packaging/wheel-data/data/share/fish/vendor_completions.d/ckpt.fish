# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_ckpt_global_optspecs
    string join \n q/quiet h/help V/version
end

function __fish_ckpt_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_ckpt_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_ckpt_using_subcommand
    set -l cmd (__fish_ckpt_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c ckpt -n "__fish_ckpt_needs_command" -s q -l quiet -d 'Draw no progress bars (they are drawn only when stderr is a terminal anyway)'
complete -c ckpt -n "__fish_ckpt_needs_command" -s h -l help -d 'Print help'
complete -c ckpt -n "__fish_ckpt_needs_command" -s V -l version -d 'Print version'
complete -c ckpt -n "__fish_ckpt_needs_command" -f -a "inspect" -d 'Report a checkpoint\'s format, tensors, locations, prefixes, AMP state and unsafe globals'
complete -c ckpt -n "__fish_ckpt_needs_command" -f -a "scan" -d 'List every global every pickle in each file names, classified safe, unknown or dangerous. Exit 0 clean, 3 unknown globals, 1 dangerous, 2 unreadable (the worst file decides, in that order)'
complete -c ckpt -n "__fish_ckpt_needs_command" -f -a "strip-module" -d 'Remove DataParallel/DDP/compile/FSDP wrapper prefixes from every state dict'
complete -c ckpt -n "__fish_ckpt_needs_command" -f -a "remap" -d 'Rewrite storage locations offline, like torch.load\'s map_location'
complete -c ckpt -n "__fish_ckpt_needs_command" -f -a "amp" -d 'Show the AMP loss-scaler state, or convert it between apex, native and npu (--to)'
complete -c ckpt -n "__fish_ckpt_needs_command" -f -a "convert" -d 'Apply several rewrites in one pass: extract/keep/drop-optimizer, strip-module, remap, amp, dtype, then write in the chosen format'
complete -c ckpt -n "__fish_ckpt_needs_command" -f -a "atc-check" -d 'Read any ONNX model against a model of CANN\'s ONNX parser: nodes ATC refuses or converts into something that computes other values. Exit 0 clean, 2 findings, 1 unreadable'
complete -c ckpt -n "__fish_ckpt_needs_command" -f -a "to-onnx" -d 'Export to ATC-ready ONNX (dynamic batch, opset 9–13): a torchvision-family checkpoint, a torch.export `.pt2` archive or a traced TorchScript model'
complete -c ckpt -n "__fish_ckpt_needs_command" -f -a "consolidate" -d 'Consolidate a sharded torch.distributed.checkpoint (DCP) folder into one state dict (.pth or safetensors), streaming each tensor\'s chunks into place'
complete -c ckpt -n "__fish_ckpt_needs_command" -f -a "shard" -d 'Write one checkpoint as a sharded torch.distributed.checkpoint (DCP) folder for N ranks, laid out as FSDP2 saves it (every tensor split along dim 0), for `dcp.load`'
complete -c ckpt -n "__fish_ckpt_needs_command" -f -a "to-safetensors" -d 'Write a checkpoint\'s state dict as safetensors (shared tensors stored once)'
complete -c ckpt -n "__fish_ckpt_needs_command" -f -a "batch" -d 'Run a plan (TOML) of steps over many checkpoints in parallel, with a manifest, resume and sharding'
complete -c ckpt -n "__fish_ckpt_needs_command" -f -a "manifest" -d 'Work with batch manifests (`merge` shard manifests)'
complete -c ckpt -n "__fish_ckpt_needs_command" -f -a "check" -d 'Run an ONNX export (tract) and its TorchScript model (libtorch) on the same random inputs at several batch sizes; print the differences, exit 1 past the tolerance. Needs a binary built with the `libtorch` cargo feature'
complete -c ckpt -n "__fish_ckpt_needs_command" -f -a "generate" -d 'Print shell completions (bash, zsh, fish) or the man page, drawn from this binary\'s own options'
complete -c ckpt -n "__fish_ckpt_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c ckpt -n "__fish_ckpt_using_subcommand inspect" -l json -d 'Print one JSON object instead of text'
complete -c ckpt -n "__fish_ckpt_using_subcommand inspect" -s q -l quiet -d 'Draw no progress bars (they are drawn only when stderr is a terminal anyway)'
complete -c ckpt -n "__fish_ckpt_using_subcommand inspect" -s h -l help -d 'Print help'
complete -c ckpt -n "__fish_ckpt_using_subcommand scan" -l allow -d 'Treat this global as safe for this run: a dotted path (`mypkg.config.TrainConfig`) or `module.*` for every name under a module. Repeatable. Never passes a dangerous global' -r
complete -c ckpt -n "__fish_ckpt_using_subcommand scan" -l allow-file -d 'Read `--allow` names from FILE, one per line (`#` starts a comment)' -r -F
complete -c ckpt -n "__fish_ckpt_using_subcommand scan" -l json -d 'Print one JSON object (`files`, `skipped`, `exit_code`) instead of text'
complete -c ckpt -n "__fish_ckpt_using_subcommand scan" -s q -l quiet -d 'Draw no progress bars (they are drawn only when stderr is a terminal anyway)'
complete -c ckpt -n "__fish_ckpt_using_subcommand scan" -s h -l help -d 'Print help'
complete -c ckpt -n "__fish_ckpt_using_subcommand strip-module" -s o -l output -d 'Output file (written to a temporary file beside it, then renamed into place)' -r -F
complete -c ckpt -n "__fish_ckpt_using_subcommand strip-module" -l prefix -d 'Strip exactly this prefix (repeatable) instead of auto-detecting `module.`, `_orig_mod.`, `_fsdp_wrapped_module.` and `_checkpoint_wrapped_module.`' -r
complete -c ckpt -n "__fish_ckpt_using_subcommand strip-module" -l key -d 'Only the state dicts under this top-level key' -r
complete -c ckpt -n "__fish_ckpt_using_subcommand strip-module" -l in-place -d 'Replace the input file itself (atomically, after the new file is complete)'
complete -c ckpt -n "__fish_ckpt_using_subcommand strip-module" -l allow-unknown-globals -d 'Proceed even if the input names globals that are on no allow-list (e.g. pickled `torch.nn` modules). They are kept as names, never imported, and stay in the output, which `ckpt scan` therefore reports as unknown (exit 3). Dangerous globals (os.system, eval, …) are always refused'
complete -c ckpt -n "__fish_ckpt_using_subcommand strip-module" -s q -l quiet -d 'Draw no progress bars (they are drawn only when stderr is a terminal anyway)'
complete -c ckpt -n "__fish_ckpt_using_subcommand strip-module" -s h -l help -d 'Print help'
complete -c ckpt -n "__fish_ckpt_using_subcommand remap" -s o -l output -d 'Output file (written to a temporary file beside it, then renamed into place)' -r -F
complete -c ckpt -n "__fish_ckpt_using_subcommand remap" -l map -d 'Map one location to another: `cuda:1=cuda:0`, `cuda:*=cpu` (repeatable; first match wins)' -r
complete -c ckpt -n "__fish_ckpt_using_subcommand remap" -l to -d 'Put every storage on this device: `cpu`, `cuda:0`, `npu:0`' -r
complete -c ckpt -n "__fish_ckpt_using_subcommand remap" -l in-place -d 'Replace the input file itself (atomically, after the new file is complete)'
complete -c ckpt -n "__fish_ckpt_using_subcommand remap" -l allow-unknown-globals -d 'Proceed even if the input names globals that are on no allow-list (e.g. pickled `torch.nn` modules). They are kept as names, never imported, and stay in the output, which `ckpt scan` therefore reports as unknown (exit 3). Dangerous globals (os.system, eval, …) are always refused'
complete -c ckpt -n "__fish_ckpt_using_subcommand remap" -l allow-noop -d 'Write the output even when no storage location matches `--map` (or there are none)'
complete -c ckpt -n "__fish_ckpt_using_subcommand remap" -s q -l quiet -d 'Draw no progress bars (they are drawn only when stderr is a terminal anyway)'
complete -c ckpt -n "__fish_ckpt_using_subcommand remap" -s h -l help -d 'Print help'
complete -c ckpt -n "__fish_ckpt_using_subcommand amp" -s o -l output -d 'Write the converted checkpoint here (with --to)' -r -F
complete -c ckpt -n "__fish_ckpt_using_subcommand amp" -l to -d 'Convert the loss-scaler state to this shape; everything else is left as it is' -r -f -a "native\t''
apex\t''
npu\t''"
complete -c ckpt -n "__fish_ckpt_using_subcommand amp" -l scaler -d 'Which apex loss scaler to convert (`loss_scalerN`) when there are several' -r
complete -c ckpt -n "__fish_ckpt_using_subcommand amp" -l in-place -d 'Replace the input file itself (with --to; atomically, after the new file is complete)'
complete -c ckpt -n "__fish_ckpt_using_subcommand amp" -l json -d 'Print one JSON object (or `null`) instead of text'
complete -c ckpt -n "__fish_ckpt_using_subcommand amp" -l allow-unknown-globals -d 'Proceed even if the input names globals that are on no allow-list (e.g. pickled `torch.nn` modules). They are kept as names, never imported, and stay in the output, which `ckpt scan` therefore reports as unknown (exit 3). Dangerous globals (os.system, eval, …) are always refused'
complete -c ckpt -n "__fish_ckpt_using_subcommand amp" -s q -l quiet -d 'Draw no progress bars (they are drawn only when stderr is a terminal anyway)'
complete -c ckpt -n "__fish_ckpt_using_subcommand amp" -s h -l help -d 'Print help'
complete -c ckpt -n "__fish_ckpt_using_subcommand convert" -s o -l output -d 'Output file (written to a temporary file beside it, then renamed into place)' -r -F
complete -c ckpt -n "__fish_ckpt_using_subcommand convert" -l extract -d 'Write only the mapping under this top-level key (e.g. `state_dict`) as the checkpoint' -r
complete -c ckpt -n "__fish_ckpt_using_subcommand convert" -l keep -d 'Keep only these top-level keys' -r
complete -c ckpt -n "__fish_ckpt_using_subcommand convert" -l prefix -d 'With --strip-module: strip exactly this prefix (repeatable) instead of auto-detecting' -r
complete -c ckpt -n "__fish_ckpt_using_subcommand convert" -l map -d 'Map one storage location to another, `FROM=TO` (repeatable; as `ckpt remap`)' -r
complete -c ckpt -n "__fish_ckpt_using_subcommand convert" -l to -d 'Put every storage on this device (as `ckpt remap --to`)' -r
complete -c ckpt -n "__fish_ckpt_using_subcommand convert" -l amp -d 'Convert the AMP loss-scaler state to this shape (as `ckpt amp --to`)' -r -f -a "native\t''
apex\t''
npu\t''"
complete -c ckpt -n "__fish_ckpt_using_subcommand convert" -l scaler -d 'With --amp: which apex loss scaler to convert when there are several' -r
complete -c ckpt -n "__fish_ckpt_using_subcommand convert" -l dtype -d 'Cast the floating-point tensors of every state dict to this dtype' -r -f -a "float32\t''
float16\t''
bfloat16\t''"
complete -c ckpt -n "__fish_ckpt_using_subcommand convert" -l format -d 'Output container: `zip` (torch ≥ 1.6) or `legacy` (readable by torch ≤ 1.5). Default: the input\'s' -r -f -a "zip\t''
legacy\t''"
complete -c ckpt -n "__fish_ckpt_using_subcommand convert" -l in-place -d 'Replace the input file itself (atomically, after the new file is complete)'
complete -c ckpt -n "__fish_ckpt_using_subcommand convert" -l allow-unknown-globals -d 'Proceed even if the input names globals that are on no allow-list (e.g. pickled `torch.nn` modules). They are kept as names, never imported, and stay in the output, which `ckpt scan` therefore reports as unknown (exit 3). Dangerous globals (os.system, eval, …) are always refused'
complete -c ckpt -n "__fish_ckpt_using_subcommand convert" -l drop-optimizer -d 'Remove optimizer, scheduler and AMP state (top-level `optimizer`, `lr_scheduler`, `scaler`, `amp`, Lightning\'s `optimizer_states`, …)'
complete -c ckpt -n "__fish_ckpt_using_subcommand convert" -l strip-module -d 'Remove wrapper prefixes from every state dict (as `ckpt strip-module`)'
complete -c ckpt -n "__fish_ckpt_using_subcommand convert" -l allow-noop -d 'With --map/--to: go on when no storage location matches (as `ckpt remap`)'
complete -c ckpt -n "__fish_ckpt_using_subcommand convert" -l dtype-optimizer -d 'With --dtype: cast optimizer state too (not its `step` counters)'
complete -c ckpt -n "__fish_ckpt_using_subcommand convert" -l plain -d 'Make the output load with `torch.load`\'s default `weights_only=True` (torch ≥ 2.6): rewrite argparse Namespaces and omegaconf configs into dicts and lists, numpy arrays into tensors, numpy scalars into numbers, paths into strings and enum members into their values; refuse (naming the object and its key) anything else torch\'s allow-list lacks. Implies --allow-unknown-globals for the classes it rewrites away'
complete -c ckpt -n "__fish_ckpt_using_subcommand convert" -s v -l verbose -d 'With --plain: print the key path of every rewritten object, not only the counts'
complete -c ckpt -n "__fish_ckpt_using_subcommand convert" -s q -l quiet -d 'Draw no progress bars (they are drawn only when stderr is a terminal anyway)'
complete -c ckpt -n "__fish_ckpt_using_subcommand convert" -s h -l help -d 'Print help'
complete -c ckpt -n "__fish_ckpt_using_subcommand atc-check" -l cann -d 'The CANN generation whose parser to model: 2022 (the plugin sources read), or 8.1, 8.3, 8.5 (their model opsets from public reports, the 2022 operator rules)' -r
complete -c ckpt -n "__fish_ckpt_using_subcommand atc-check" -l device-reading -d 'Also write OUT.onnx, the device reading: the model with each node replaced by what ATC\'s parser turns it into (docs/atc.md says what it covers). A model ATC rejects, or with a node whose device meaning is not expressed, gets no reading (exit 1)' -r -F
complete -c ckpt -n "__fish_ckpt_using_subcommand atc-check" -l json -d 'Print one JSON object (`file`, `cann`, `opset`, `nodes`, `findings`, `unmodelled`, `device_reading`, `exit_code`) instead of text'
complete -c ckpt -n "__fish_ckpt_using_subcommand atc-check" -s q -l quiet -d 'Draw no progress bars (they are drawn only when stderr is a terminal anyway)'
complete -c ckpt -n "__fish_ckpt_using_subcommand atc-check" -s h -l help -d 'Print help'
complete -c ckpt -n "__fish_ckpt_using_subcommand to-onnx" -s o -l output -d 'Output ONNX file (written to a temporary file beside it, then renamed into place)' -r -F
complete -c ckpt -n "__fish_ckpt_using_subcommand to-onnx" -l arch -d 'torchvision architecture name, or `auto` (the default): the checkpoint\'s `arch` field, else the keys. Not for `.pt2` archives, which carry their own graph' -r
complete -c ckpt -n "__fish_ckpt_using_subcommand to-onnx" -l opset -d 'ONNX opset (ATC takes 9–13)' -r
complete -c ckpt -n "__fish_ckpt_using_subcommand to-onnx" -l input-shape -d 'Per-sample input shape [default: 3,224,224]. For a TorchScript trace, repeat it as NAME:DIMS[:DTYPE] per input (`ids:128:int64`, `mask:128:bool`). Not for `.pt2` archives, whose program fixes it' -r
complete -c ckpt -n "__fish_ckpt_using_subcommand to-onnx" -l batch -d '`dynamic` (a named batch dimension, compiled with ATC\'s dynamic batch), a fixed size, or `static` (`.pt2` and TorchScript traces: every size as the program records it and no batch axis, so ops may work along any axis; for ATC without dynamic profiles; a program with a declared dynamic dimension is refused)' -r
complete -c ckpt -n "__fish_ckpt_using_subcommand to-onnx" -l input-name -d 'Name of the graph input [default: input]. A `.pt2` or TorchScript model with several inputs names them after its forward\'s parameters and refuses this flag' -r
complete -c ckpt -n "__fish_ckpt_using_subcommand to-onnx" -l output-name -d 'Name of the graph output' -r
complete -c ckpt -n "__fish_ckpt_using_subcommand to-onnx" -l soc -d 'Ascend SoC for the printed ATC command' -r
complete -c ckpt -n "__fish_ckpt_using_subcommand to-onnx" -l atc-cmd -d 'Also write the ATC command to FILE' -r -F
complete -c ckpt -n "__fish_ckpt_using_subcommand to-onnx" -l allow-unknown-globals -d 'Proceed even if the input names globals that are on no allow-list (e.g. pickled `torch.nn` modules). They are kept as names, never imported, and stay in the output, which `ckpt scan` therefore reports as unknown (exit 3). Dangerous globals (os.system, eval, …) are always refused'
complete -c ckpt -n "__fish_ckpt_using_subcommand to-onnx" -l no-fold-bn -d 'Keep BatchNormalization nodes instead of folding them into the convolutions'
complete -c ckpt -n "__fish_ckpt_using_subcommand to-onnx" -l transform-input -d 'googlenet: the model was built with `transform_input=True` (torchvision\'s default with pretrained weights), so the graph re-normalises the input first'
complete -c ckpt -n "__fish_ckpt_using_subcommand to-onnx" -s q -l quiet -d 'Draw no progress bars (they are drawn only when stderr is a terminal anyway)'
complete -c ckpt -n "__fish_ckpt_using_subcommand to-onnx" -s h -l help -d 'Print help'
complete -c ckpt -n "__fish_ckpt_using_subcommand consolidate" -s o -l output -d 'Output file' -r -F
complete -c ckpt -n "__fish_ckpt_using_subcommand consolidate" -l format -d 'Output format; inferred from the extension (`.safetensors`, else pth)' -r -f -a "pth\t''
safetensors\t''"
complete -c ckpt -n "__fish_ckpt_using_subcommand consolidate" -l extract -d 'Write only the entries under this dotted key (e.g. `model`), as the top level. For a DeepSpeed folder: the parameters and buffers named `PREFIX.…`, without the prefix' -r
complete -c ckpt -n "__fish_ckpt_using_subcommand consolidate" -l model-only -d 'Drop optimizer state (`state`/`param_groups` mappings) and training-state keys. A DeepSpeed folder\'s output is the model\'s state dict already: no change'
complete -c ckpt -n "__fish_ckpt_using_subcommand consolidate" -l json -d 'Print a JSON summary instead of text'
complete -c ckpt -n "__fish_ckpt_using_subcommand consolidate" -l allow-unknown-globals -d 'Proceed even if the input names globals that are on no allow-list (e.g. pickled `torch.nn` modules). They are kept as names, never imported, and stay in the output, which `ckpt scan` therefore reports as unknown (exit 3). Dangerous globals (os.system, eval, …) are always refused'
complete -c ckpt -n "__fish_ckpt_using_subcommand consolidate" -s q -l quiet -d 'Draw no progress bars (they are drawn only when stderr is a terminal anyway)'
complete -c ckpt -n "__fish_ckpt_using_subcommand consolidate" -s h -l help -d 'Print help'
complete -c ckpt -n "__fish_ckpt_using_subcommand shard" -s o -l output -d 'Output folder (written beside itself, then renamed into place)' -r -F
complete -c ckpt -n "__fish_ckpt_using_subcommand shard" -l ranks -d 'Number of ranks: every tensor is split along dim 0 into this many `torch.chunk` pieces' -r
complete -c ckpt -n "__fish_ckpt_using_subcommand shard" -l force -d 'Replace an existing non-empty output folder, if it holds a DCP checkpoint'
complete -c ckpt -n "__fish_ckpt_using_subcommand shard" -l json -d 'Print a JSON summary instead of text'
complete -c ckpt -n "__fish_ckpt_using_subcommand shard" -l allow-unknown-globals -d 'Proceed even if the input names globals that are on no allow-list (e.g. pickled `torch.nn` modules). They are kept as names, never imported, and stay in the output, which `ckpt scan` therefore reports as unknown (exit 3). Dangerous globals (os.system, eval, …) are always refused'
complete -c ckpt -n "__fish_ckpt_using_subcommand shard" -s q -l quiet -d 'Draw no progress bars (they are drawn only when stderr is a terminal anyway)'
complete -c ckpt -n "__fish_ckpt_using_subcommand shard" -s h -l help -d 'Print help'
complete -c ckpt -n "__fish_ckpt_using_subcommand to-safetensors" -s o -l output -d 'Output file (written to a temporary file beside it, then renamed into place)' -r -F
complete -c ckpt -n "__fish_ckpt_using_subcommand to-safetensors" -l key -d 'Export the state dict under this top-level key (default: the only state dict found). Keys are written as they are: strip wrapper prefixes with `ckpt strip-module` first' -r
complete -c ckpt -n "__fish_ckpt_using_subcommand to-safetensors" -l allow-unknown-globals -d 'Proceed even if the input names globals that are on no allow-list (e.g. pickled `torch.nn` modules). They are kept as names, never imported, and stay in the output, which `ckpt scan` therefore reports as unknown (exit 3). Dangerous globals (os.system, eval, …) are always refused'
complete -c ckpt -n "__fish_ckpt_using_subcommand to-safetensors" -s q -l quiet -d 'Draw no progress bars (they are drawn only when stderr is a terminal anyway)'
complete -c ckpt -n "__fish_ckpt_using_subcommand to-safetensors" -s h -l help -d 'Print help'
complete -c ckpt -n "__fish_ckpt_using_subcommand batch" -l jobs -d 'Inputs processed at once' -r
complete -c ckpt -n "__fish_ckpt_using_subcommand batch" -l shard -d 'Process only shard I of N, for job arrays: every input belongs to exactly one shard. Shards are numbered from 0 (0 ≤ I < N), as Kubernetes\' $JOB_COMPLETION_INDEX; from a Slurm array numbered from 1, pass $((SLURM_ARRAY_TASK_ID - 1))/N' -r
complete -c ckpt -n "__fish_ckpt_using_subcommand batch" -l manifest -d 'Manifest file (default: `<plan>.manifest.json` beside the plan, or `<plan>.manifest.I-of-N.json` with --shard)' -r -F
complete -c ckpt -n "__fish_ckpt_using_subcommand batch" -l dry-run -d 'Print each input with its outputs and what a run would do; write nothing'
complete -c ckpt -n "__fish_ckpt_using_subcommand batch" -l allow-unknown-globals -d 'Proceed even if the input names globals that are on no allow-list (e.g. pickled `torch.nn` modules). They are kept as names, never imported, and stay in the output, which `ckpt scan` therefore reports as unknown (exit 3). Dangerous globals (os.system, eval, …) are always refused'
complete -c ckpt -n "__fish_ckpt_using_subcommand batch" -s q -l quiet -d 'Draw no progress bars (they are drawn only when stderr is a terminal anyway)'
complete -c ckpt -n "__fish_ckpt_using_subcommand batch" -s h -l help -d 'Print help'
complete -c ckpt -n "__fish_ckpt_using_subcommand manifest; and not __fish_seen_subcommand_from merge help" -s q -l quiet -d 'Draw no progress bars (they are drawn only when stderr is a terminal anyway)'
complete -c ckpt -n "__fish_ckpt_using_subcommand manifest; and not __fish_seen_subcommand_from merge help" -s h -l help -d 'Print help'
complete -c ckpt -n "__fish_ckpt_using_subcommand manifest; and not __fish_seen_subcommand_from merge help" -f -a "merge" -d 'Join shard manifests of one plan into one'
complete -c ckpt -n "__fish_ckpt_using_subcommand manifest; and not __fish_seen_subcommand_from merge help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c ckpt -n "__fish_ckpt_using_subcommand manifest; and __fish_seen_subcommand_from merge" -s o -l output -d 'The merged manifest' -r -F
complete -c ckpt -n "__fish_ckpt_using_subcommand manifest; and __fish_seen_subcommand_from merge" -s q -l quiet -d 'Draw no progress bars (they are drawn only when stderr is a terminal anyway)'
complete -c ckpt -n "__fish_ckpt_using_subcommand manifest; and __fish_seen_subcommand_from merge" -s h -l help -d 'Print help'
complete -c ckpt -n "__fish_ckpt_using_subcommand manifest; and __fish_seen_subcommand_from help" -f -a "merge" -d 'Join shard manifests of one plan into one'
complete -c ckpt -n "__fish_ckpt_using_subcommand manifest; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c ckpt -n "__fish_ckpt_using_subcommand check" -l against -d 'The TorchScript archive it came from (`torch.jit.trace` + `torch.jit.save`); it runs in libtorch, in eval mode, without gradients. `.pt2` archives cannot be run by libtorch\'s C++ API and are refused' -r -F
complete -c ckpt -n "__fish_ckpt_using_subcommand check" -l batches -d 'Batch sizes to run, in order' -r
complete -c ckpt -n "__fish_ckpt_using_subcommand check" -l seed -d 'Seed of the random inputs: `torch.manual_seed(SEED)`, then `torch.randn` per batch size and per ONNX input, in order' -r
complete -c ckpt -n "__fish_ckpt_using_subcommand check" -l tolerance -d 'Largest `rel` that passes, where `rel = max|onnx − torch| / max(1, max|torch|)` per output and batch size. Exit status 1 when any comparison exceeds it' -r
complete -c ckpt -n "__fish_ckpt_using_subcommand check" -l allow-unknown-globals -d 'Proceed even if the input names globals that are on no allow-list (e.g. pickled `torch.nn` modules). They are kept as names, never imported, and stay in the output, which `ckpt scan` therefore reports as unknown (exit 3). Dangerous globals (os.system, eval, …) are always refused'
complete -c ckpt -n "__fish_ckpt_using_subcommand check" -s q -l quiet -d 'Draw no progress bars (they are drawn only when stderr is a terminal anyway)'
complete -c ckpt -n "__fish_ckpt_using_subcommand check" -s h -l help -d 'Print help'
complete -c ckpt -n "__fish_ckpt_using_subcommand generate" -s q -l quiet -d 'Draw no progress bars (they are drawn only when stderr is a terminal anyway)'
complete -c ckpt -n "__fish_ckpt_using_subcommand generate" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c ckpt -n "__fish_ckpt_using_subcommand help; and not __fish_seen_subcommand_from inspect scan strip-module remap amp convert atc-check to-onnx consolidate shard to-safetensors batch manifest check generate help" -f -a "inspect" -d 'Report a checkpoint\'s format, tensors, locations, prefixes, AMP state and unsafe globals'
complete -c ckpt -n "__fish_ckpt_using_subcommand help; and not __fish_seen_subcommand_from inspect scan strip-module remap amp convert atc-check to-onnx consolidate shard to-safetensors batch manifest check generate help" -f -a "scan" -d 'List every global every pickle in each file names, classified safe, unknown or dangerous. Exit 0 clean, 3 unknown globals, 1 dangerous, 2 unreadable (the worst file decides, in that order)'
complete -c ckpt -n "__fish_ckpt_using_subcommand help; and not __fish_seen_subcommand_from inspect scan strip-module remap amp convert atc-check to-onnx consolidate shard to-safetensors batch manifest check generate help" -f -a "strip-module" -d 'Remove DataParallel/DDP/compile/FSDP wrapper prefixes from every state dict'
complete -c ckpt -n "__fish_ckpt_using_subcommand help; and not __fish_seen_subcommand_from inspect scan strip-module remap amp convert atc-check to-onnx consolidate shard to-safetensors batch manifest check generate help" -f -a "remap" -d 'Rewrite storage locations offline, like torch.load\'s map_location'
complete -c ckpt -n "__fish_ckpt_using_subcommand help; and not __fish_seen_subcommand_from inspect scan strip-module remap amp convert atc-check to-onnx consolidate shard to-safetensors batch manifest check generate help" -f -a "amp" -d 'Show the AMP loss-scaler state, or convert it between apex, native and npu (--to)'
complete -c ckpt -n "__fish_ckpt_using_subcommand help; and not __fish_seen_subcommand_from inspect scan strip-module remap amp convert atc-check to-onnx consolidate shard to-safetensors batch manifest check generate help" -f -a "convert" -d 'Apply several rewrites in one pass: extract/keep/drop-optimizer, strip-module, remap, amp, dtype, then write in the chosen format'
complete -c ckpt -n "__fish_ckpt_using_subcommand help; and not __fish_seen_subcommand_from inspect scan strip-module remap amp convert atc-check to-onnx consolidate shard to-safetensors batch manifest check generate help" -f -a "atc-check" -d 'Read any ONNX model against a model of CANN\'s ONNX parser: nodes ATC refuses or converts into something that computes other values. Exit 0 clean, 2 findings, 1 unreadable'
complete -c ckpt -n "__fish_ckpt_using_subcommand help; and not __fish_seen_subcommand_from inspect scan strip-module remap amp convert atc-check to-onnx consolidate shard to-safetensors batch manifest check generate help" -f -a "to-onnx" -d 'Export to ATC-ready ONNX (dynamic batch, opset 9–13): a torchvision-family checkpoint, a torch.export `.pt2` archive or a traced TorchScript model'
complete -c ckpt -n "__fish_ckpt_using_subcommand help; and not __fish_seen_subcommand_from inspect scan strip-module remap amp convert atc-check to-onnx consolidate shard to-safetensors batch manifest check generate help" -f -a "consolidate" -d 'Consolidate a sharded torch.distributed.checkpoint (DCP) folder into one state dict (.pth or safetensors), streaming each tensor\'s chunks into place'
complete -c ckpt -n "__fish_ckpt_using_subcommand help; and not __fish_seen_subcommand_from inspect scan strip-module remap amp convert atc-check to-onnx consolidate shard to-safetensors batch manifest check generate help" -f -a "shard" -d 'Write one checkpoint as a sharded torch.distributed.checkpoint (DCP) folder for N ranks, laid out as FSDP2 saves it (every tensor split along dim 0), for `dcp.load`'
complete -c ckpt -n "__fish_ckpt_using_subcommand help; and not __fish_seen_subcommand_from inspect scan strip-module remap amp convert atc-check to-onnx consolidate shard to-safetensors batch manifest check generate help" -f -a "to-safetensors" -d 'Write a checkpoint\'s state dict as safetensors (shared tensors stored once)'
complete -c ckpt -n "__fish_ckpt_using_subcommand help; and not __fish_seen_subcommand_from inspect scan strip-module remap amp convert atc-check to-onnx consolidate shard to-safetensors batch manifest check generate help" -f -a "batch" -d 'Run a plan (TOML) of steps over many checkpoints in parallel, with a manifest, resume and sharding'
complete -c ckpt -n "__fish_ckpt_using_subcommand help; and not __fish_seen_subcommand_from inspect scan strip-module remap amp convert atc-check to-onnx consolidate shard to-safetensors batch manifest check generate help" -f -a "manifest" -d 'Work with batch manifests (`merge` shard manifests)'
complete -c ckpt -n "__fish_ckpt_using_subcommand help; and not __fish_seen_subcommand_from inspect scan strip-module remap amp convert atc-check to-onnx consolidate shard to-safetensors batch manifest check generate help" -f -a "check" -d 'Run an ONNX export (tract) and its TorchScript model (libtorch) on the same random inputs at several batch sizes; print the differences, exit 1 past the tolerance. Needs a binary built with the `libtorch` cargo feature'
complete -c ckpt -n "__fish_ckpt_using_subcommand help; and not __fish_seen_subcommand_from inspect scan strip-module remap amp convert atc-check to-onnx consolidate shard to-safetensors batch manifest check generate help" -f -a "generate" -d 'Print shell completions (bash, zsh, fish) or the man page, drawn from this binary\'s own options'
complete -c ckpt -n "__fish_ckpt_using_subcommand help; and not __fish_seen_subcommand_from inspect scan strip-module remap amp convert atc-check to-onnx consolidate shard to-safetensors batch manifest check generate help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c ckpt -n "__fish_ckpt_using_subcommand help; and __fish_seen_subcommand_from manifest" -f -a "merge" -d 'Join shard manifests of one plan into one'
