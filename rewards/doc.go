// Package rewards turns verifier scores into training rewards (docs/spec.md#rewards-and-verifiers):
// reward components and their weighted composition, sample-level routing
// of a mixed batch to its verifiers, the Judge interface for
// LLM-as-a-judge rewards, VAGEN's turn rewards, and per-source
// diagnostics.
//
// # Components (AVATAR, arXiv 2508.03100, §4.3)
//
//	format (Eq. 7):      R_format = +1 for <think>…</think><answer>…</answer>, else −1   (Format)
//	accuracy (Eq. 8):    R_acc = 1 − min(1, |a − a_gt| / |a_gt|), a_gt ≠ 0            (RMAE, RMAEVerifier)
//	self-reward (9–10):  o*_maj = the most common answer of the group (ties: the answer of the
//	                     tied response with the highest mean token likelihood);
//	                     R_self(o_i) = 1 if o_i = o*_maj, else 0                     (SelfReward)
//	judge:               s_judge ∈ [0, 1] from a frozen model                       (Judge, AskJudge)
//
// V-Triune's format reward (Eq. 2, 0.25 per tag occurring exactly once) is
// verifiers.FormatTags.
//
// # Composition (AVATAR Table 1)
//
//	S1: 0.5·R_format + 0.5·R_acc                 (AVATARStage1)
//	S2: 0.2·R_format + 0.4·R_acc + 0.4·R_self    (AVATARStage2)
//	S3: 0.2·R_format + 0.4·R_acc + 0.4·R_judge   (AVATARStage3)
//
// Composite holds any such weighted sum.
//
// # Turn rewards (VAGEN, §5.3)
//
//	r_t = r_reason + r_format + R(s_t, a_t),   r_reason = β_g·I_g + β_w·I_w,
//
// β_g = β_w = 0.5, r_format = 0.5 for a well-formed turn (TurnRewards,
// VAGENTurnConfig); JudgeTurn asks a Judge for I_g and I_w from the
// <observation> and <prediction> sections of a Grounding-WorldModeling turn.
//
// VerdictJudge turns a judge model's reply into I ∈ {0, 1} with
// ParseVerdict, which reads the <answer>YES</answer> or
// <answer>NO</answer> VAGEN's judge prompts ask for (Appendix D.1.1).
// GroundingWorldModelingFormat is VAGEN's Table 5 format, <reasoning>
// included (verifiers.VAGENFormat checks all five strategies).
//
// # Structured reasoning reward and repetition penalty (VAGEN Appendix D.1.2)
//
// The reasoning, converted by a parser model into a dictionary of entities
// and relations, scores the F1 of its facts against the ground-truth
// dictionary (verifiers.StructuredF1). A response whose sentence is among
// the TopK most frequent sentences of the history (a max-heap) and whose
// F1 < 0.7 gets −0.1:
//
//	reward = F1 + penalty,  penalty = −0.1 if repeated ∧ F1 < 0.7, else 0   (ScoreStructured)
//
// The history is a RepetitionTracker the trainer owns: Penalty reads it
// (concurrently), Record adds a step's sentences afterwards, Snapshot and
// RestoreRepetitionTracker carry it across restarts. VAGEN gives neither
// the heap's size nor a memory bound; rlpost uses TopK 10 and 65536
// distinct sentences.
//
// # Sample-level routing (V-Triune, "One RL to See Them All", §3.1, Fig. 8)
//
// Every sample carries a RouteSpec: data_source, verifier (a key of a
// verifiers.Registry), verifier_parm, accuracy_ratio a and format_ratio f
// (defaults 1.0 and 0.1). Its reward is
//
//	reward = a·acc + f·format,
//
// V-Triune's α_acc·R_acc + α_format·R_format (§3.2, after Eq. 3), with acc
// the named verifier's score and format V-Triune's Eq. 2 unless the Router
// says otherwise. The weighted mean (a·acc + f·format)/(a + f), which
// rlpost computed before, is RouteSpec.CombineNormalized. A Router scores a whole batch in one call on a
// bounded pool of goroutines under the caller's context; a sample whose
// spec, reference or verifier fails gets its own error and a reward of 0,
// and the rest of the batch goes on. Rewards land in [0, a + f]; AReaL's reward
// scaling and DAPO's overlong shaping are applied afterwards with
// grpo.ShapeRewards and grpo.Overlong.
//
// # Source-level diagnostics (V-Triune §3.3, Appendix I)
//
// Diagnostics accumulates, per data_source: mean reward, accuracy and
// format; correct rate; mean response length over all, correct and
// incorrect responses; truncation rate; the reflection ratio
// R_reflect = N_reflect/N_total (Eq. 4) and the correctness within
// reflection C_reflect = N_correct_reflect/N_reflect (Eq. 5), a response
// being reflective when it holds one of the 15 words of Reflective.
// Snapshot, Reset and Flush serve a trainer that logs once a step; Metrics
// flattens a snapshot for a logger.
//
// FixedIoU is §3.3's auxiliary fixed-threshold IoU: per source, the share
// of localisation answers with raw IoU ≥ 0.5 (IoU@50, the threshold §4.5
// and Appendix J monitor) and their mean raw IoU, unaffected by the Dynamic
// IoU schedule of the training reward.
//
// # Verifiers and errors
//
// RMAEVerifier and JudgeVerifier are verifiers.Factory values: register
// them under a name of the caller's choice; their parameters are read once
// when the Router (through the registry) builds the verifier. Every error
// of this package starts "rewards: ", a sample's with its index and, when
// it has one, its data source ("rewards: samples[3] (gsm8k): verifiers:
// math: ref: syntax error: …"); input errors are *tensor.ArgError values.
// Package rewardstest holds test doubles: FakeJudge, a deterministic
// Judge.
package rewards
