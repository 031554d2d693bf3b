"""``symphony-emu validate``: a spec checked and its plan described, without the network."""

from __future__ import annotations

from emulator.cli.common import load_spec, seeds_text


def cmd_validate(args) -> int:
    from emulator import plan as planning
    from emulator.plan.layout import theoretical_cct_s
    spec = load_spec(args)
    if spec is None:
        return 2
    plan = planning.compile(spec, spec.run.schemes[0], spec.run.seeds[0])
    rate = plan.link_rate_bps
    print(f"{args.spec}: ok — {spec.name}: {len(spec.topology.host_names)} hosts, links "
          f"{rate / 1e6:g} Mbit/s emulated (D = {spec.scale.dilation:g}), schemes "
          f"{', '.join(spec.run.schemes)}, seeds {seeds_text(spec.run.seeds)}")
    for job, lay in zip(spec.jobs, plan.layouts):
        start = f", starts at {lay.start_s * 1e3:.0f} ms" if lay.start_s else ""
        if lay.after_job:
            start = f", starts {lay.start_s * 1e3:.0f} ms after job {lay.after_job}"
        if lay.program:
            mtu = spec.transport.mtu_bytes
            per_iter = len(lay.program) // job.iterations
            one = lay.program[:per_iter]
            comm = sum(theoretical_cct_s(lay, rate, mtu, nbytes=c[0]) for c in one)
            print(f"  job {lay.job}: {job.workload} training, {len(lay.hosts)} ranks in "
                  f"{len(lay.rings)} ring(s) of {len(lay.rings[0])}, {job.iterations} "
                  f"iteration(s) x {per_iter} gradient buckets ({sum(c[0] for c in one)} B "
                  f"per rank), compute {one[-1][1] * 1e3:.0f} ms and lockstep all-reduces "
                  f"{comm * 1e3:.0f} ms per iteration, emulated{start}")
            continue
        theo = theoretical_cct_s(lay, rate, spec.transport.mtu_bytes)
        print(f"  job {lay.job}: {lay.algorithm}, {len(lay.hosts)} ranks in {len(lay.rings)} "
              f"ring(s) of {len(lay.rings[0])}, {lay.nbytes} B per rank, {lay.steps} steps x "
              f"{lay.passes} passes, theoretical CCT {theo * 1e3:.1f} ms emulated{start}")
    return 0
