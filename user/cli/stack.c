/* `hprof stack PID`: every thread's stack of a running process, the way `eu-stack -p` or
 * gdb's `thread apply all bt` print it, but unwound with hprof's own DWARF walk. The
 * threads are stopped with ptrace only while their registers, stacks and mappings (and a
 * CPython's frame chains) are copied; unwinding and symbolizing happen after they run on.
 * In a CPython process each thread's Python frames replace the evaluator's native ones,
 * as in a recording (`py-spy dump --native`). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/commands.h"
#include "binary/modules.h"
#include "binary/naming.h"
#include "binary/inline_frames.h"
#include "binary/python_names.h"
#include "proc/procmaps.h"
#include "python/threads.h"
#include "session.h"
#include "unwind/walk.h"
#include "util/grow.h"
#include "util/process_memory.h"

/* Stack bytes copied per thread, from sp up to the end of its mapping: the default
 * RLIMIT_STACK and pthread stack size, so a deeper stack ends "copy too short". */
#define STACK_COPY_MAX (8u << 20)
#define STACK_COPY_CHUNK (256u << 10)

struct thread {
	pid_t tid;
	bool stopped;    /* in a ptrace-stop: must be detached */
	int pending_sig; /* signal its stop intercepted, delivered again at detach */
	char comm[32];
	struct unwind_regs regs;
	uint8_t *stack;  /* copy of [regs.sp, regs.sp + stack_len) */
	uint64_t stack_len;
	uint64_t fs_base;                /* its pthread: what CPython knows it by */
	struct python_thread_frames *py; /* its Python frames, read while it was stopped */
};

struct range {
	uint64_t start, end;
};

struct stack_cmd {
	pid_t pid;
	struct thread *threads; /* the first nr_sorted sorted by thread_cmp, then this scan's */
	size_t nr_threads, nr_sorted, cap_threads;
	char *maps_text;
	size_t maps_len;
	struct range *ranges; /* every mapping, executable or not, ascending as the kernel lists them */
	size_t nr_ranges;
	enum session_python python; /* --python */
	bool python_known;          /* python_proc holds the process's CPython */
	struct hprof_python_proc python_proc;
	bool no_inline, no_lines;   /* --no-inline, --no-lines */
	struct inline_frames *inline_frames; /* NULL: neither inline frames nor lines */
};

static void usage(FILE *out)
{
	fprintf(out, "Usage: hprof stack [--python MODE] [--no-inline] [--no-lines] PID\n"
		     "Prints every thread's stack of process PID, a frame per line, unwound with\n"
		     "DWARF CFI (no frame pointers needed). The process is stopped with ptrace only\n"
		     "while its registers and stacks are copied; a stopped process stays stopped.\n"
		     "  --python MODE  CPython's frames (module.function (file:line)) in place of\n"
		     "                 its evaluator's: on (the default), native (keeping the\n"
		     "                 interpreter's frames between them) or off\n"
		     "  --no-inline    no frames for inlined calls (from the binaries' DWARF)\n"
		     "  --no-lines     no file:line after the frames (from the binaries' DWARF)\n");
}

/* Returns 0, 1 for --help, or -EINVAL. */
static int parse_args(int argc, char **argv, struct stack_cmd *cmd)
{
	enum { OPT_PYTHON = 256, OPT_NO_INLINE, OPT_NO_LINES };
	static const struct option long_opts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "python", required_argument, NULL, OPT_PYTHON },
		{ "no-inline", no_argument, NULL, OPT_NO_INLINE },
		{ "no-lines", no_argument, NULL, OPT_NO_LINES },
		{ 0 },
	};
	char *end;
	long pid;
	int opt;

	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
		if (opt == 'h') {
			usage(stdout);
			return 1;
		}
		if (opt == OPT_NO_INLINE) {
			cmd->no_inline = true;
		} else if (opt == OPT_NO_LINES) {
			cmd->no_lines = true;
		} else if (opt == OPT_PYTHON && strcmp(optarg, "on") == 0) {
			cmd->python = SESSION_PYTHON_ON;
		} else if (opt == OPT_PYTHON && strcmp(optarg, "native") == 0) {
			cmd->python = SESSION_PYTHON_NATIVE;
		} else if (opt == OPT_PYTHON && strcmp(optarg, "off") == 0) {
			cmd->python = SESSION_PYTHON_OFF;
		} else if (opt == OPT_PYTHON) {
			fprintf(stderr, "hprof: stack: --python takes on, native or off, got '%s'\n",
				optarg);
			return -EINVAL;
		} else {
			fprintf(stderr, "hprof: stack: unknown option: '%s' (see hprof stack --help)\n",
				argv[optind - 1]);
			return -EINVAL;
		}
	}
	if (optind != argc - 1) {
		fprintf(stderr, "hprof: stack: expected one PID (see hprof stack --help)\n");
		return -EINVAL;
	}
	errno = 0;
	pid = strtol(argv[optind], &end, 10);
	if (errno || end == argv[optind] || *end || pid <= 0 || pid > INT32_MAX) {
		fprintf(stderr, "hprof: stack: not a process id: '%s'\n", argv[optind]);
		return -EINVAL;
	}
	cmd->pid = (pid_t)pid;
	return 0;
}

/* The state letter of /proc/PID/task/TID/stat ('R', 'S', 'T', 'Z', ...). Returns 0 or
 * -errno. */
static int task_state(pid_t pid, pid_t tid, char *state)
{
	char path[64], buf[512], *paren;
	ssize_t n;
	int fd, err;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	err = n < 0 ? -errno : 0;
	close(fd);
	if (err)
		return err;
	buf[n] = '\0';
	/* comm may hold spaces and parentheses: the state follows the last ')'. */
	paren = strrchr(buf, ')');
	if (!paren || paren[1] != ' ' || !paren[2])
		return -EIO;
	*state = paren[2];
	return 0;
}

static void read_comm(pid_t pid, pid_t tid, char *comm, size_t size)
{
	char path[64];
	ssize_t n = -1;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", pid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, comm, size - 1);
		close(fd);
	}
	if (n <= 0) {
		snprintf(comm, size, "?");
		return;
	}
	comm[n] = '\0';
	comm[strcspn(comm, "\n")] = '\0';
}

/* The process's own thread first, then by thread id. */
static int thread_cmp_tid(pid_t pid, pid_t a, pid_t b)
{
	if (a == b)
		return 0;
	if (a == pid || b == pid)
		return a == pid ? -1 : 1;
	return a < b ? -1 : 1;
}

static int thread_cmp(const void *a, const void *b, void *pid)
{
	return thread_cmp_tid(*(const pid_t *)pid, ((const struct thread *)a)->tid,
			      ((const struct thread *)b)->tid);
}

/* Whether an earlier scan found tid (a scan lists each thread once). */
static bool has_thread(const struct stack_cmd *cmd, pid_t tid)
{
	size_t lo = 0, hi = cmd->nr_sorted;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = thread_cmp_tid(cmd->pid, cmd->threads[mid].tid, tid);

		if (c == 0)
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

static struct thread *add_thread(struct stack_cmd *cmd, pid_t tid)
{
	if (grow_array((void **)&cmd->threads, &cmd->cap_threads, cmd->nr_threads + 1,
		       sizeof(*cmd->threads)))
		return NULL;
	cmd->threads[cmd->nr_threads] = (struct thread){ .tid = tid };
	return &cmd->threads[cmd->nr_threads++];
}

/* Waits for a seized and interrupted thread to stop. Returns 0, or -ESRCH when it exited
 * first. */
static int wait_stopped(struct thread *t)
{
	int status;

	for (;;) {
		if (waitpid(t->tid, &status, __WALL) < 0) {
			if (errno == EINTR)
				continue;
			return errno == ECHILD ? -ESRCH : -errno;
		}
		if (WIFEXITED(status) || WIFSIGNALED(status))
			return -ESRCH;
		if (!WIFSTOPPED(status))
			continue;
		/* PTRACE_EVENT_STOP: the interrupt, or a group-stop already in effect. Without
		 * an event it is a signal the thread was about to take: hand it back. */
		if (status >> 16 == 0)
			t->pending_sig = WSTOPSIG(status);
		t->stopped = true;
		return 0;
	}
}

/* Seizes and stops one thread. A thread that exits (or is already a zombie) on the way
 * is left out. Returns 0, -ESRCH when it is gone, or -errno. */
static int stop_thread(struct stack_cmd *cmd, struct thread *t)
{
	char state = 0;
	int err;

	/* PTRACE_SEIZE, unlike PTRACE_ATTACH, sends no SIGSTOP, and its detach puts a
	 * thread of a stopped process back into the group-stop. */
	if (ptrace(PTRACE_SEIZE, t->tid, NULL, NULL) < 0) {
		err = -errno;
		if (err == -EPERM && task_state(cmd->pid, t->tid, &state) == 0 &&
		    (state == 'Z' || state == 'X'))
			return -ESRCH;
		return err;
	}
	if (ptrace(PTRACE_INTERRUPT, t->tid, NULL, NULL) < 0) {
		err = -errno;
		ptrace(PTRACE_DETACH, t->tid, NULL, NULL);
		return err;
	}
	return wait_stopped(t);
}

/* Stops every thread of the process. Threads created meanwhile show up in the next scan
 * of /proc/PID/task; once every listed thread is stopped, none can be created. Returns 0
 * or -errno with a message printed. */
static int stop_all(struct stack_cmd *cmd)
{
	char path[64];
	bool added;
	int err;

	snprintf(path, sizeof(path), "/proc/%d/task", cmd->pid);
	do {
		struct dirent *ent;
		DIR *dir = opendir(path);

		if (!dir) {
			err = -errno;
			if (err == -ENOENT)
				fprintf(stderr, "hprof: stack: no process %d\n", cmd->pid);
			else
				fprintf(stderr, "hprof: stack: %s: %s\n", path, strerror(-err));
			return err;
		}
		added = false;
		while ((ent = readdir(dir))) {
			pid_t tid = (pid_t)atoi(ent->d_name);
			struct thread *t;

			if (tid <= 0 || has_thread(cmd, tid))
				continue;
			t = add_thread(cmd, tid);
			if (!t) {
				closedir(dir);
				fprintf(stderr, "hprof: stack: out of memory\n");
				return -ENOMEM;
			}
			added = true;
			err = stop_thread(cmd, t);
			if (err && err != -ESRCH) {
				closedir(dir);
				fprintf(stderr, "hprof: stack: cannot trace %d: %s\n", tid,
					strerror(-err));
				return err;
			}
		}
		closedir(dir);
		qsort_r(cmd->threads, cmd->nr_threads, sizeof(*cmd->threads), thread_cmp, &cmd->pid);
		cmd->nr_sorted = cmd->nr_threads;
	} while (added);
	return 0;
}

static struct thread *first_stopped(struct stack_cmd *cmd)
{
	for (size_t i = 0; i < cmd->nr_threads; i++) {
		if (cmd->threads[i].stopped)
			return &cmd->threads[i];
	}
	return NULL;
}

static void detach_all(struct stack_cmd *cmd)
{
	for (size_t i = 0; i < cmd->nr_threads; i++) {
		struct thread *t = &cmd->threads[i];

		if (t->stopped)
			ptrace(PTRACE_DETACH, t->tid, NULL, (void *)(long)t->pending_sig);
		t->stopped = false;
	}
}

/* The address ranges of every mapping in the text of /proc/PID/maps (procmaps keeps
 * only executable ones; stacks are not). Returns 0 or -ENOMEM. */
static int read_ranges(struct stack_cmd *cmd)
{
	size_t cap = 0;

	cmd->nr_ranges = 0;
	for (const char *line = cmd->maps_text; line && *line;) {
		unsigned long long start, end;

		if (sscanf(line, "%llx-%llx", &start, &end) == 2) {
			if (grow_array((void **)&cmd->ranges, &cap, cmd->nr_ranges + 1,
				       sizeof(*cmd->ranges)))
				return -ENOMEM;
			cmd->ranges[cmd->nr_ranges++] = (struct range){ start, end };
		}
		line = strchr(line, '\n');
		if (line)
			line++;
	}
	return 0;
}

/* The end of the mapping holding addr, or 0. */
static uint64_t mapping_end(const struct stack_cmd *cmd, uint64_t addr)
{
	size_t lo = 0, hi = cmd->nr_ranges;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < cmd->ranges[mid].start)
			hi = mid;
		else if (addr >= cmd->ranges[mid].end)
			lo = mid + 1;
		else
			return cmd->ranges[mid].end;
	}
	return 0;
}

/* Copies the thread's stack from sp to the end of its mapping, at most STACK_COPY_MAX
 * bytes; a short read keeps what was read. Returns 0 or -ENOMEM. */
static int copy_stack(struct stack_cmd *cmd, struct thread *t)
{
	uint64_t end = mapping_end(cmd, t->regs.sp);
	uint64_t want = end > t->regs.sp ? end - t->regs.sp : 0;

	if (want > STACK_COPY_MAX)
		want = STACK_COPY_MAX;
	t->stack = malloc(want ? want : 1);
	if (!t->stack)
		return -ENOMEM;
	while (t->stack_len < want) {
		uint64_t chunk = want - t->stack_len;
		struct iovec local, remote;
		ssize_t n;

		if (chunk > STACK_COPY_CHUNK)
			chunk = STACK_COPY_CHUNK;
		local = (struct iovec){ t->stack + t->stack_len, chunk };
		remote = (struct iovec){ (void *)(uintptr_t)(t->regs.sp + t->stack_len), chunk };
		n = process_vm_readv(t->tid, &local, 1, &remote, 1, 0);
		if (n <= 0)
			break;
		t->stack_len += (uint64_t)n;
		if ((uint64_t)n < chunk)
			break;
	}
	return 0;
}

/* Registers and stack of every stopped thread; a thread whose registers cannot be read
 * (killed meanwhile) is left out. Returns 0 or -ENOMEM. */
static int copy_threads(struct stack_cmd *cmd)
{
	for (size_t i = 0; i < cmd->nr_threads; i++) {
		struct thread *t = &cmd->threads[i];
		struct user_regs_struct regs;
		int err;

		if (!t->stopped)
			continue;
		if (ptrace(PTRACE_GETREGS, t->tid, NULL, &regs) < 0) {
			ptrace(PTRACE_DETACH, t->tid, NULL, (void *)(long)t->pending_sig);
			t->stopped = false;
			continue;
		}
		t->regs = (struct unwind_regs){
			.ip = regs.rip, .sp = regs.rsp, .bp = regs.rbp, .bx = regs.rbx, .di = regs.rdi,
			.bp_valid = true, .bx_valid = true, .di_valid = true, .drap_valid = true,
			.drap = { regs.r10, 0, regs.r12, regs.r13, regs.r14, regs.r15 },
		};
		t->fs_base = regs.fs_base;
		read_comm(cmd->pid, t->tid, t->comm, sizeof(t->comm));
		err = copy_stack(cmd, t);
		if (err)
			return err;
	}
	return 0;
}

static bool read_process(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return process_memory__read(*(const uint32_t *)ctx, addr, buf, len);
}

/* Learns the kernel's view of the process's CPython (python/process.h): what the frame
 * chains are read through, as the BPF program reads them. */
static void learn_python(void *ctx, uint32_t pid, const struct hprof_python_proc *p)
{
	struct stack_cmd *cmd = ctx;

	if (p && pid == (uint32_t)cmd->pid) {
		cmd->python_proc = *p;
		cmd->python_known = true;
	}
}

/* Every stopped thread's Python frames, while nothing runs that could change them.
 * Returns 0 or -ENOMEM. */
static int read_python(struct stack_cmd *cmd)
{
	uint32_t pid = (uint32_t)cmd->pid;

	for (size_t i = 0; cmd->python_known && i < cmd->nr_threads; i++) {
		struct thread *t = &cmd->threads[i];

		if (!t->stopped)
			continue;
		t->py = malloc(sizeof(*t->py));
		if (!t->py)
			return -ENOMEM;
		python_thread__frames(&cmd->python_proc, t->fs_base, read_process, &pid, t->py);
	}
	return 0;
}

/* Room for a thread's frames: its native ones and the Python frames put in their place. */
#define STACK_FRAMES_MAX (UNWIND_MAX_FRAMES + HPROF_PY_MAX_FRAMES)

struct print_buf {
	struct unwind_frame walked[UNWIND_MAX_FRAMES];
	struct frame frames[STACK_FRAMES_MAX];
	uint32_t origin[STACK_FRAMES_MAX]; /* as python_stack__place gives it */
};

static void print_python(struct module_registry *modules, uint32_t *i, const struct frame *f,
			 FILE *out)
{
	const struct python_location *loc =
		python_names__get(module_registry__python_names(modules), f->addr);
	char *name = frame_name__format(modules, NULL, f);

	fprintf(out, "#%-3u %s", (*i)++, name ? name : "?");
	if (loc && loc->line > 0)
		fprintf(out, " (%s:%d)", loc->file, loc->line);
	else if (loc)
		fprintf(out, " (%s)", loc->file);
	fputc('\n', out);
	free(name);
}

/* " at file:line" where loc has them, as gdb's bt ends a frame. */
static void print_place(const struct python_location *loc, FILE *out)
{
	if (loc && loc->file[0] && loc->line > 0)
		fprintf(out, " at %s:%d", loc->file, loc->line);
}

/* The calls inlined at f's pc, innermost first, each a frame of its own without an
 * address, as gdb's bt shows them. */
static void print_inlined(const struct stack_cmd *cmd, struct module_registry *modules,
			  uint32_t *i, const struct inline_expansion *x, FILE *out)
{
	struct python_names *names = module_registry__inline_names(modules);

	for (uint32_t k = x->nr_inlined; cmd->inline_frames && k-- > 0;) {
		const struct python_location *loc = python_names__get(names, x->inlined[k].addr);

		if (!loc)
			continue;
		fprintf(out, "#%-3u %-18s %s (%s)", (*i)++, "[inlined]", loc->function, loc->module);
		print_place(loc, out);
		fputc('\n', out);
	}
}

static void print_native(const struct stack_cmd *cmd, struct module_registry *modules,
			 uint32_t *i, const struct unwind_frame *walked, const struct frame *f,
			 FILE *out)
{
	const struct module *mod = NULL;
	char *name = frame_name__format(modules, NULL, f);
	struct inline_expansion x = { 0 };

	if (f->module >= MODULE_FIRST_FILE)
		mod = module_registry__by_id(modules, f->module);
	if (cmd->inline_frames)
		inline_frames__expand(cmd->inline_frames, f, &x);
	print_inlined(cmd, modules, i, &x, out);
	fprintf(out, "#%-3u 0x%016" PRIx64 " %s", (*i)++, walked->pc, name ? name : "?");
	if (mod)
		fprintf(out, " (%s)", mod->name);
	if (x.has_line)
		print_place(python_names__get(module_registry__inline_names(modules), x.line_id), out);
	fputc('\n', out);
	/* as Breakpad says how each frame was found; only where it was not by CFI */
	if (walked->found > UNWIND_FOUND_CFI)
		fprintf(out, "     found by %s\n", unwind_found__name(walked->found));
	free(name);
}

static void print_thread(struct session *s, const struct stack_cmd *cmd, const struct thread *t,
			 struct print_buf *b, FILE *out)
{
	const struct stack_copy copy = { .bytes = t->stack, .base = t->regs.sp, .len = t->stack_len };
	struct module_registry *modules = session__modules(s);
	uint32_t pid = (uint32_t)cmd->pid, n;
	/* a thread whose frames were not read: as a sample taken before the process was known */
	struct python_chain chain = { .status = HPROF_PY_NONE };
	enum python_reason why = PYTHON_REASON_COUNT;
	struct unwind_result result;

	fprintf(out, "Thread %d (%s):\n", t->tid, t->comm);
	if (session__walk_process(s, pid, &t->regs, &copy, b->walked, UNWIND_MAX_FRAMES,
				  &result) != 0) {
		fprintf(out, "    [out of memory]\n");
		return;
	}
	n = result.nr_frames;
	for (uint32_t i = 0; i < n; i++) {
		b->frames[i] = (struct frame){ .module = MODULE_UNMAPPED, .addr = b->walked[i].pc };
		session__resolve_frame(s, pid, b->walked[i].pc, !b->walked[i].exact, &b->frames[i]);
		b->origin[i] = i;
	}
	if (t->py)
		chain = (struct python_chain){ .frames = t->py->frames, .nr = t->py->nr,
					       .status = t->py->status };
	if (cmd->python != SESSION_PYTHON_OFF &&
	    session__python_place(s, pid, &chain, b->frames, &n, STACK_FRAMES_MAX, b->origin,
				  &why) != 0) {
		fprintf(out, "    [out of memory]\n");
		return;
	}
	for (uint32_t i = 0, shown = 0; i < n; i++) {
		if (b->origin[i] == PYTHON_FRAME_PLACED)
			print_python(modules, &shown, &b->frames[i], out);
		else
			print_native(cmd, modules, &shown, &b->walked[b->origin[i]], &b->frames[i],
				     out);
	}
	if (result.end != UNWIND_END_COMPLETE)
		fprintf(out, "    %s\n", hybrid__truncated_root(result.end));
	/* why a thread of a CPython process that runs Python code shows none, or not all */
	if (why != PYTHON_REASON_COUNT && why != PYTHON_IDLE && why != PYTHON_NO_THREAD)
		fprintf(out, "    [Python frames: %s]\n", python_reason__name(why));
}

static void stack_cmd__free(struct stack_cmd *cmd)
{
	for (size_t i = 0; i < cmd->nr_threads; i++) {
		free(cmd->threads[i].stack);
		free(cmd->threads[i].py);
	}
	free(cmd->threads);
	free(cmd->maps_text);
	free(cmd->ranges);
}

int cmd_stack(int argc, char **argv)
{
	struct stack_cmd cmd = { 0 };
	struct print_buf *buf = NULL;
	struct session *s = NULL;
	struct thread *stopped;
	size_t printed = 0;
	int err;

	err = parse_args(argc, argv, &cmd);
	if (err)
		return err > 0 ? 0 : 2;
	if (cmd.pid == getpid()) {
		fprintf(stderr, "hprof: stack: cannot trace itself\n");
		return 1;
	}
	/* Everything slow happens before the process is stopped or after it runs on. */
	err = session__new(true, &s);
	if (err) {
		fprintf(stderr, "hprof: stack: %s\n", strerror(-err));
		goto cleanup;
	}
	session__set_python(s, cmd.python);
	session__set_python_hook(s, learn_python, &cmd);
	buf = malloc(sizeof(*buf));
	if (!buf) {
		err = -ENOMEM;
		fprintf(stderr, "hprof: stack: out of memory\n");
		goto cleanup;
	}
	err = process_maps__read_text(cmd.pid, &cmd.maps_text, &cmd.maps_len);
	if (err == -ENOENT || err == -ESRCH) {
		fprintf(stderr, "hprof: stack: no process %d\n", cmd.pid);
		goto cleanup;
	}
	if (!err && cmd.maps_len == 0) {
		err = -EINVAL;
		fprintf(stderr, "hprof: stack: %d has no user memory (a kernel thread or a zombie)\n",
			cmd.pid);
		goto cleanup;
	}
	/* A CPython is recognised from its binaries now, while the process runs: its frame
	 * chains are then read while it is stopped. (The mappings read again below replace
	 * these; one unmapped in between stays, in a range no frame can be in.) */
	if (!err && cmd.python != SESSION_PYTHON_OFF &&
	    session__load_maps(s, (uint32_t)cmd.pid, cmd.maps_text, cmd.maps_len) == 0 &&
	    !session__python_proc(s, (uint32_t)cmd.pid)) {
		err = -ENOMEM;
		fprintf(stderr, "hprof: stack: out of memory\n");
		goto cleanup;
	}
	free(cmd.maps_text);
	cmd.maps_text = NULL;
	err = stop_all(&cmd);
	if (err)
		goto cleanup;
	stopped = first_stopped(&cmd);
	if (!stopped) {
		err = -ESRCH;
		fprintf(stderr, "hprof: stack: no process %d\n", cmd.pid);
		goto cleanup;
	}
	/* Read again now that nothing runs, through a live thread: an exited leader's own
	 * maps file is empty. */
	err = process_maps__read_text(stopped->tid, &cmd.maps_text, &cmd.maps_len);
	if (err) {
		fprintf(stderr, "hprof: stack: /proc/%d/maps: %s\n", stopped->tid, strerror(-err));
		goto cleanup;
	}
	err = read_ranges(&cmd);
	if (!err)
		err = copy_threads(&cmd);
	if (!err)
		err = read_python(&cmd);
	if (err) {
		fprintf(stderr, "hprof: stack: out of memory\n");
		goto cleanup;
	}
	detach_all(&cmd);
	err = session__load_maps(s, (uint32_t)cmd.pid, cmd.maps_text, cmd.maps_len);
	if (err) {
		fprintf(stderr, "hprof: stack: out of memory\n");
		goto cleanup;
	}
	if ((!cmd.no_inline || !cmd.no_lines) &&
	    inline_frames__new(session__modules(s), !cmd.no_inline, !cmd.no_lines,
			       &cmd.inline_frames) != 0) {
		err = -ENOMEM;
		fprintf(stderr, "hprof: stack: out of memory\n");
		goto cleanup;
	}
	for (size_t i = 0; i < cmd.nr_threads; i++) {
		if (!cmd.threads[i].stack)
			continue;
		if (printed++)
			putchar('\n');
		print_thread(s, &cmd, &cmd.threads[i], buf, stdout);
	}
	if (printed == 0) {
		err = -ESRCH;
		fprintf(stderr, "hprof: stack: no process %d\n", cmd.pid);
	}
cleanup:
	detach_all(&cmd);
	inline_frames__free(cmd.inline_frames);
	stack_cmd__free(&cmd);
	free(buf);
	session__free(s);
	if (fflush(stdout) != 0 && !err)
		err = -EIO;
	return err ? 1 : 0;
}
