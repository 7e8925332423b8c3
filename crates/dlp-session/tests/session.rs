//! The session against the pieces it replaces: the registry's adaptation, build and the
//! runner called by hand give the same bits; the observer pieces compose as tuples; the
//! resolution's defaults and messages are the front ends'.

use dlp_core::testing::Quadratic;
use dlp_core::{Observer, RunOptions, Space, States, StepContext, StepInfo, Target, run_chains};
use dlp_samplers::SamplerParams;
use dlp_samplers::adapt::{AdaptOptions, DEFAULT_WINDOW, adapt_step_size};
use dlp_session::{Error, Request, Session, Spelling, StepSize, Tallies, Trace, initial_states};

/// A 12-bit quadratic model with couplings, so that acceptance is below 1.
fn target() -> Quadratic {
    let d = 12;
    let mut w = vec![0.0; d * d];
    for i in 0..d - 1 {
        w[i * d + i + 1] = 0.4 * if i % 2 == 0 { 1.0 } else { -1.0 };
    }
    let b = (0..d).map(|i| 0.1 * i as f64 - 0.5).collect();
    Quadratic::new(Space::binary(d), w, b)
}

fn request(sampler: &str, step_size: StepSize) -> Request {
    Request {
        sampler: sampler.into(),
        step_size,
        step_size_min: None,
        preconditioner: None,
        batch_size: None,
        ladder: None,
        chains: 6,
        steps: 300,
        burn_in: None,
        thin: 7,
        target_accept: None,
        progress: false,
    }
}

/// Per-chain sums of accept_prob, an observer written independently of the pieces.
struct Sums(Vec<f64>, Vec<usize>, Vec<u32>);
impl Observer for Sums {
    fn observe(&mut self, ctx: &StepContext, states: States<'_>, info: &[StepInfo]) {
        for (s, i) in self.0.iter_mut().zip(info) {
            *s += i.accept_prob;
        }
        self.1.push(ctx.step);
        self.2.extend_from_slice(states.positions());
    }
}

#[test]
fn an_adapting_session_is_the_registry_adaptation_build_and_run_by_hand() {
    let t = target();
    let options = RunOptions { seed: 11, threads: 2, chains_per_task: 2 };
    let x0 = initial_states(t.space(), 6, true, 11);
    let session = Session::resolve(request("dmala", StepSize::Default), Spelling::Flags, &t).unwrap();
    assert!(session.adapts(), "dmala without a step size adapts");
    let mut told = None;
    let ran = session
        .run(&t, x0.clone(), &options, |a| told = Some(a.clone()), |stage, _, n| (stage.progress(n), Tallies::new(n)))
        .unwrap();

    // By hand: half the steps of warm-up in windows of min(150, 100), then the fixed-α kernel.
    let opts = AdaptOptions { warmup: 150, window: 150usize.min(DEFAULT_WINDOW), ..Default::default() };
    let a = adapt_step_size("dmala", &SamplerParams::default(), &t, &x0, &opts, &options).unwrap();
    let warm = a.windows * opts.window;
    let kernel =
        dlp_samplers::build_sampler("dmala", &SamplerParams { step_size: a.step_size, ..Default::default() }).unwrap();
    let out =
        run_chains(kernel.as_ref(), &t, &a.positions, 300 - warm, &options, |_, n| Sums(vec![0.0; n], vec![], vec![]))
            .unwrap();

    assert_eq!(ran.warmup_steps, warm);
    assert_eq!(ran.steps, 300 - warm);
    assert_eq!(ran.step_size, a.step_size);
    assert_eq!(ran.output.final_states, out.final_states);
    let told = told.expect("the adaptation is reported");
    assert_eq!((told.step_size, told.steps, told.target_accept), (a.step_size, warm, 0.574));
    let pieces: Vec<f64> = ran.output.observers.iter().flat_map(|(_, t)| t.accept_prob.clone()).collect();
    let by_hand: Vec<f64> = out.observers.iter().flat_map(|s| s.0.clone()).collect();
    assert_eq!(pieces, by_hand);
}

#[test]
fn a_fixed_step_size_runs_every_step_and_the_trace_keeps_the_thinned_ones() {
    let t = target();
    let options = RunOptions { seed: 3, threads: 1, chains_per_task: 4 };
    let x0 = initial_states(t.space(), 6, false, 3);
    let mut req = request("dmala", StepSize::Fixed(0.4));
    req.burn_in = Some(100);
    let session = Session::resolve(req, Spelling::Keywords, &t).unwrap();
    assert!(!session.adapts());
    let ran = session
        .run(
            &t,
            x0.clone(),
            &options,
            |_| panic!("no adaptation"),
            |stage, _, n| (stage.trace(n), Sums(vec![0.0; n], vec![], vec![])),
        )
        .unwrap();
    assert_eq!((ran.warmup_steps, ran.steps, ran.step_size), (0, 300, Some(0.4)));
    let kernel =
        dlp_samplers::build_sampler("dmala", &SamplerParams { step_size: Some(0.4), ..Default::default() }).unwrap();
    let out = run_chains(kernel.as_ref(), &t, &x0, 300, &options, |_, _| ()).unwrap();
    assert_eq!(ran.output.final_states, out.final_states);
    // Two tasks (4 + 2 chains); each trace keeps steps 107, 114, …, 296 of its chains, the
    // states the independent observer saw at those steps.
    let expect: Vec<usize> = (107..=300).step_by(7).collect();
    let d = t.space().d;
    for (trace, sums) in ran.output.observers.iter().map(|(t, s)| (t as &Trace, s)) {
        assert_eq!(trace.steps(), &expect[..]);
        let n = trace.chains();
        for (k, &step) in expect.iter().enumerate() {
            let seen = &sums.2[(step - 1) * n * d..step * n * d];
            assert_eq!(trace.at(k), seen);
            assert_eq!(trace.state(k, n - 1), &seen[(n - 1) * d..]);
        }
    }
}

#[test]
fn resolution_gives_every_front_end_the_same_defaults_and_messages() {
    let t = target();
    let resolve = |r: Request, s: Spelling| Session::resolve(r, s, &t).map(|s| s.adapts());
    // No step size: dmala adapts, gwg and dula do not (dula then fails to build).
    assert_eq!(resolve(request("dmala", StepSize::Default), Spelling::Flags), Ok(true));
    assert_eq!(resolve(request("gwg", StepSize::Default), Spelling::Flags), Ok(false));
    assert!(matches!(resolve(request("dula", StepSize::Default), Spelling::Flags), Err(Error::Input(_))));
    // `Without` (Python's None) never adapts: dmala then needs a step size.
    assert!(matches!(resolve(request("dmala", StepSize::Without), Spelling::Keywords), Err(Error::Input(_))));
    // `auto` is refused where the sampler cannot adapt, with the adaptation's message.
    let err = resolve(request("gwg", StepSize::Auto), Spelling::Flags).unwrap_err();
    assert!(err.to_string().contains("Metropolis-adjusted"), "{err}");
    assert!(resolve(request("no-such", StepSize::Auto), Spelling::Flags).unwrap_err().to_string().contains("no-such"));
    // The warm-up must fit; the message names the parameters as the front end spells them.
    let mut r = request("dmala", StepSize::Auto);
    r.burn_in = Some(301);
    let flags = resolve(r.clone(), Spelling::Flags).unwrap_err();
    let keywords = resolve(r, Spelling::Keywords).unwrap_err();
    assert_eq!(flags.to_string(), "step-size adaptation needs 1 ≤ --burn-in ≤ --steps warm-up steps, got 301 of 300");
    assert_eq!(keywords.to_string(), "step-size adaptation needs 1 ≤ burn_in ≤ steps warm-up steps, got 301 of 300");
    assert_eq!(flags.exit_code(), 2);
}

/// A change to a valid request, and the message each spelling must give for it.
type Case = (Box<dyn Fn(&mut Request)>, &'static str, &'static str);

#[test]
fn checks_come_in_one_order_with_each_front_ends_names() {
    let cases: Vec<Case> = vec![
        (
            Box::new(|r| r.step_size = StepSize::Fixed(f64::NAN)),
            "--step-size must be a finite number > 0, got NaN",
            "step_size must",
        ),
        (
            Box::new(|r| r.step_size_min = Some(-1.0)),
            "--step-size-min must be a finite number > 0, got -1",
            "step_size_min must",
        ),
        (Box::new(|r| r.target_accept = Some(1.0)), "--target-accept must be in (0, 1), got 1", "target_accept must"),
        (Box::new(|r| r.chains = 0), "--chains must be at least 1", "chains must"),
        (Box::new(|r| r.thin = 0), "--thin must be at least 1", "thin must"),
        (Box::new(|r| r.batch_size = Some(0)), "--batch-size must be at least 1", "batch_size must"),
    ];
    for (spoil, flags, keywords) in cases {
        let mut r = request("dmala", StepSize::Default);
        spoil(&mut r);
        assert_eq!(r.check(Spelling::Flags).unwrap_err().to_string(), flags);
        assert!(r.check(Spelling::Keywords).unwrap_err().to_string().starts_with(keywords));
    }
    // Two faults: the first in the order is reported.
    let mut r = request("dmala", StepSize::Fixed(0.0));
    r.chains = 0;
    assert!(r.check(Spelling::Flags).unwrap_err().to_string().starts_with("--step-size"));
    assert_eq!(request("dmala", StepSize::Auto).check(Spelling::Flags), Ok(()));
}

#[test]
fn a_device_failure_is_internal_and_one_line() {
    use dlp_core::{EvalError, SamplerError};
    let e = Error::from_run(SamplerError::Eval(EvalError::Device {
        device: "cuda:0".into(),
        message: "out of\nmemory".into(),
    }));
    assert_eq!((e.exit_code(), e.to_string().as_str()), (1, "internal error: device error on cuda:0: out of memory"));
    assert_eq!(Error::from_run(SamplerError::Eval(EvalError::NoData)).exit_code(), 2);
}
