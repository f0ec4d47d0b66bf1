/* main.c: the minitir command line, `tirc <command> <example> [options]`.
 * It schedules the seed examples (the seed library, examples/seed/),
 * shows their IR and traces, writes their PTX, runs and verifies them on
 * the GPU against cuBLAS or in the SIMT simulator against the reference
 * interpreter, and benchmarks them against cuBLAS (the seed's Step 7
 * table), using only the public API.  This file checks the example and
 * the options that depend on each other (args.c: which command takes
 * which option) and dispatches to the command's file (tirc.h).
 *
 * Exit codes (also in `tirc --help`): 0 ok, 1 verification failure,
 * 2 usage error, 3 no GPU where one is required, 4 compile error
 * (schedule, lowering or codegen), 5 other runtime (CUDA) error.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tirc.h"

/* Whether the file at path can be written (created in its directory, or
 * replaced): "" if so, else why. */
static const char *cannot_write(const char *path) {
    struct stat sb;
    if (!*path) return strerror(ENOENT);
    if (stat(path, &sb) == 0) {
        if (S_ISDIR(sb.st_mode)) return strerror(EISDIR);
        return access(path, W_OK) ? strerror(errno) : "";
    }
    if (errno != ENOENT) return strerror(errno);
    char dir[4096];
    const char *slash = strrchr(path, '/');
    if (!slash) return access(".", W_OK | X_OK) ? strerror(errno) : "";
    snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    return access(dir, W_OK | X_OK) ? strerror(errno) : "";
}

/* The example, options that depend on each other, and the defaults that
 * depend on the command.  Returns EXIT_OK or (after the message)
 * EXIT_USAGE. */
static int check_options(opts *o) {
    if (!o->example) return tirc_usage_error("%s needs an example: matmul or fused", o->cmd);
    if (strcmp(o->example, "matmul") && strcmp(o->example, "fused"))
        return tirc_usage_error("unknown example '%s': use matmul or fused", o->example);
    if (!o->size_given) o->M = o->N = o->K = 1024;
    int last = tirc_is_fused(o)               ? SEED_NFUSED_STEPS
               : o->kind != TIR_RT_GEMM_F32 ? TIRC_STEP_TC
                                              : SEED_NSTEPS;
    if (!o->step_given) o->step_hi = last;
    if (!strcmp(o->cmd, "ptx") && !o->step_given) o->step_lo = o->step_hi = last;
    if (o->step_hi > last)
        return tirc_usage_error("the fused example has Steps 1-%d (Steps 7 and 8 are the plain "
                                "matmul's)",
                                last);
    if (o->sim && o->gpu) return tirc_usage_error("--sim and --gpu exclude each other");
    /* which command takes which option: tirc_parse_args */
    bool tune = !strcmp(o->cmd, "tune");
    if (o->replay_nsm && !o->replay) return tirc_usage_error("--nsm belongs to --replay");
    bool tc = o->kind != TIR_RT_GEMM_F32;
    /* --arch before any work: bench once compiled every step of every
       size for an unknown arch, each row n/a, and exited 4 at the end */
    if (!tune) {
        tir_ctx *c = tir_ctx_create();
        tir_status st = c ? tir_codegen_check_arch(c, o->arch) : TIR_ERR_NOMEM;
        if (st != TIR_OK) {
            int rc = c ? tirc_usage_error("--arch: %s", tir_ctx_error(c)) : EXIT_RUNTIME;
            tir_ctx_destroy(c);
            return rc;
        }
        tir_ctx_destroy(c);
    }
    /* --tile and --db where no step of the command uses them (they once
       ran as if absent): Steps 7-8 take sgemm.c's tiles; --db is read by
       the matmul's Step 8 (Step 9 with --dtype) without --splitk, whose
       schedule is the record's */
    bool rule_steps_only = o->step_lo >= 7;
    if (o->tile_given && ((!tc && rule_steps_only) || (tc && o->db)))
        return tirc_usage_error("--tile is for Steps 1-6 and Step 9 (--dtype), not with --db: "
                                "Steps 7-8 take the tiling rule's tiles (--config)");
    if (o->db && !tune &&
        (tirc_is_fused(o) || o->splitk > 1 || o->step_hi < (tc ? TIRC_STEP_TC : 8)))
        return tirc_usage_error("--db is for Step 8 (Step 9 with --dtype) of the matmul example, "
                                "not with --splitk: no other step reads tuned records");
    const unsigned sched_bits = TIRC_TC_OFF_BPAIRS | TIRC_TC_OFF_FRAGPIPE | TIRC_TC_OFF_SWIZZLE |
                                TIRC_TC_OFF_ODDPAD | TIRC_TC_OFF_SMEMSWZ | TIRC_TC_OFF_WGMMA;
    if (o->db && ((o->tc_off & sched_bits) || (o->tc_on & TIRC_TC_ON_WGMMA)))
        return tirc_usage_error("--tc-off bpairs, fragpipe, swizzle, oddpad, smemswz and wgmma "
                                "and --tc-on wgmma are not for --db (a record has its "
                                "schedule)");
    /* files, before any work: a database to read must exist (opening
       creates one: a mistyped --replay or bench --db left an empty file
       behind and ran on as if it had no records), and the files to write
       must be writable (bench once ran its whole table before saying it
       could not write --csv, and tune's --plot failed silently) */
    const char *in = o->replay ? o->replay : o->db && !tune ? o->db : NULL;
    if (in && access(in, R_OK))
        return tirc_usage_error("%s %s: %s (a database `tirc tune --db` wrote)",
                                o->replay ? "--replay" : "--db", in, strerror(errno));
    const char *outs[][2] = {{"--csv", o->csv}, {"--json", o->json}, {"--plot", o->plot},
                             {"--db", tune ? o->db : NULL}};
    for (int i = 0; i < 4; i++)
        if (outs[i][1] && *cannot_write(outs[i][1]))
            return tirc_usage_error("%s: cannot write %s: %s", outs[i][0], outs[i][1],
                                    cannot_write(outs[i][1]));
    if (tune && o->epi >= 0 && o->epi != SEED_EPI_RELU)
        return tirc_usage_error("tirc tune fused tunes the bias+relu epilogue only");
    if (tune && o->batch && tirc_is_fused(o))
        return tirc_usage_error("--batch is for the matmul example");
    if (tune && tc && o->batch)
        return tirc_usage_error("--batch is float32 only: tensor cores tune the plain matmul");
    int mk = o->kind == TIR_RT_GEMM_TF32 ? 8 : 16;
    if (tune && tc && o->K % mk)
        return tirc_usage_error("tune --dtype %s needs K a multiple of %d (tensorize refuses a "
                                "ragged k tile), not %lld",
                                tir_rt_gemm_kind_name(o->kind), mk, (long long)o->K);
    if (o->epi >= 0 && !tirc_is_fused(o))
        return tirc_usage_error("--epilogue belongs to the fused example");
    return EXIT_OK;
}

int main(int argc, char **argv) {
    opts o;
    int rc = tirc_parse_args(argc, argv, &o);
    if (rc != EXIT_OK) return rc;
    if (!o.cmd || !strcmp(o.cmd, "help")) {
        if (!o.cmd && !o.help) {
            tirc_help(NULL);
            return EXIT_USAGE;
        }
        return tirc_help(o.cmd && o.example ? o.example : NULL);
    }
    bool known = !strcmp(o.cmd, "show") || !strcmp(o.cmd, "ptx") || !strcmp(o.cmd, "run") ||
                 !strcmp(o.cmd, "bench") || !strcmp(o.cmd, "tune");
    if (!known)
        return tirc_usage_error("unknown command '%s': use show, ptx, run, bench or tune", o.cmd);
    if (o.help) return tirc_help(o.cmd);
    if ((rc = check_options(&o)) != EXIT_OK) return rc;
    tir_ctx *ctx = tir_ctx_create();
    if (!ctx) {
        fprintf(stderr, "tirc: out of memory\n");
        return EXIT_RUNTIME;
    }
    if (!strcmp(o.cmd, "show"))
        rc = tirc_cmd_show(ctx, &o);
    else if (!strcmp(o.cmd, "ptx"))
        rc = tirc_cmd_ptx(ctx, &o);
    else if (!strcmp(o.cmd, "run"))
        rc = tirc_cmd_run(ctx, &o);
    else if (!strcmp(o.cmd, "tune"))
        rc = tirc_cmd_tune(ctx, &o);
    else
        rc = tirc_cmd_bench(ctx, &o);
    tir_ctx_destroy(ctx);
    return rc;
}
