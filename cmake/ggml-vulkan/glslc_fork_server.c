// glslc, started once and forked for each compile: loaded into Debian's glslc with LD_PRELOAD by
// glslc_client.c (the program vulkan-shaders-gen runs as its --glslc), never linked into anything.
//
// Why: ggml's vulkan-shaders-gen runs glslc once per shader variant, 1,117 times for the pinned ggml. Each
// glslc process spends about 0.13 s of CPU before its first compile (glslang builds its built-in symbol
// tables) on compiles that take 0.02 s afterwards: 10 unary.comp variants took 1.33 CPU-s as 10 processes and
// 0.24 s as one. glslc cannot take per-file defines in one run, so this keeps one glslc process warm and runs
// each request in a fork of it: glslc's own main() on the request's arguments, in the client's folder, writing
// to the client's stdout and stderr. The SPIR-V is glslc's own, byte for byte (tests/lanes/glslc_server_check.py
// compares it with glslc run directly).
//
// With LIFELINE_GLSLC_SERVE=<name> in the environment, main() is replaced by the server: it warms glslang
// (a compute shader compiled through libshaderc's C API, the compiler kept alive so the tables stay), listens
// on the abstract UNIX socket <name>, and exits after LIFELINE_GLSLC_IDLE_S seconds (default 10) without a
// request. Without it, glslc runs as usual.
//
// A request (glslc_client.c): a 4-byte length, then that many bytes: the folder, then each argument, each
// NUL-terminated; with it, as SCM_RIGHTS, the client's stdout and stderr. The fork answers with its exit
// status (4 bytes) once main() has returned; a client that reads nothing (a crash, a server going away) runs
// glslc itself.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "glslc_socket.h"

typedef int (*main_fn)(int, char**, char**);
static main_fn glslc_main;

enum { kMaxRequest = 1 << 20, kMaxArgs = 4096 };

// libshaderc's C API (shaderc/shaderc.h of Debian's libshaderc-dev, which the machine need not have): the
// functions are looked up in the glslc process, which has libshaderc.so.1 loaded. Values from that header:
// shaderc_compute_shader = 2, shaderc_target_env_vulkan = 0, shaderc_env_version_vulkan_1_N = (1 << 22) |
// (N << 12), shaderc_optimization_level_performance = 2.
static int warm_glslang(void) {
  void* (*compiler_initialize)(void) = (void* (*)(void))dlsym(RTLD_DEFAULT, "shaderc_compiler_initialize");
  void* (*options_initialize)(void) = (void* (*)(void))dlsym(RTLD_DEFAULT, "shaderc_compile_options_initialize");
  void (*set_target_env)(void*, int, uint32_t) =
      (void (*)(void*, int, uint32_t))dlsym(RTLD_DEFAULT, "shaderc_compile_options_set_target_env");
  void (*set_optimization)(void*, int) =
      (void (*)(void*, int))dlsym(RTLD_DEFAULT, "shaderc_compile_options_set_optimization_level");
  void* (*compile)(void*, const char*, size_t, int, const char*, const char*, void*) =
      (void* (*)(void*, const char*, size_t, int, const char*, const char*, void*))dlsym(
          RTLD_DEFAULT, "shaderc_compile_into_spv");
  void (*release)(void*) = (void (*)(void*))dlsym(RTLD_DEFAULT, "shaderc_result_release");
  if (!compiler_initialize || !options_initialize || !set_target_env || !set_optimization || !compile ||
      !release)
    return -1;
  // Never released: while a compiler lives, glslang keeps the tables its forks reuse.
  void* compiler = compiler_initialize();
  static const char kShader[] = "#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n";
  for (uint32_t minor = 2; minor <= 3; ++minor) {  // vulkan-shaders-gen targets Vulkan 1.2, and 1.3 for _cm2
    void* options = options_initialize();
    set_target_env(options, 0, (1u << 22) | (minor << 12));
    set_optimization(options, 2);
    void* result = compile(compiler, kShader, sizeof kShader - 1, 2, "warm.comp", "main", options);
    if (result) release(result);
  }
  return 0;
}

// In the fork: runs glslc's main() on the request `conn` carries and reports its status on `conn`.
static void serve_one(int conn, char** envp) {
  struct ucred peer;
  socklen_t peer_len = sizeof peer;
  // The socket is reachable by every local user: compile only for this one.
  if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &peer, &peer_len) != 0 || peer.uid != getuid()) _exit(125);
  char control[CMSG_SPACE(2 * sizeof(int))];
  uint32_t length = 0;
  struct iovec iov = {&length, sizeof length};
  struct msghdr msg = {0};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  if (recvmsg(conn, &msg, MSG_CMSG_CLOEXEC) != (ssize_t)sizeof length) _exit(125);
  struct cmsghdr* c = CMSG_FIRSTHDR(&msg);
  if (!c || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(2 * sizeof(int))) _exit(125);
  int fds[2];
  memcpy(fds, CMSG_DATA(c), sizeof fds);
  if (length == 0 || length > kMaxRequest) _exit(125);
  char* request = malloc(length);
  if (!request || glslc_read_full(conn, request, length) != 0 || request[length - 1] != '\0') _exit(125);
  static char* argv[kMaxArgs + 1];
  int argc = 0;
  const char* cwd = request;
  for (char* p = request + strlen(request) + 1; p < request + length && argc < kMaxArgs; p += strlen(p) + 1)
    argv[argc++] = p;
  argv[argc] = NULL;
  if (argc == 0 || chdir(cwd) != 0 || dup2(fds[0], 1) < 0 || dup2(fds[1], 2) < 0) _exit(125);
  signal(SIGCHLD, SIG_DFL);  // as a glslc started by its client would have it
  close(fds[0]);
  close(fds[1]);
  int32_t status = glslc_main(argc, argv, envp);
  fflush(NULL);
  (void)!write(conn, &status, sizeof status);
  _exit(status);
}

static void* warm_in_thread(void* result) {
  *(int*)result = warm_glslang();
  return NULL;
}

static int serve(const char* name, char** envp) {
  // Warmed on a thread of its own, so the memory that warm-up compile used and freed (its thread's glslang pool,
  // its malloc arena) is not what the forks' compiles, on the main thread, are given. Debian's glslc reads
  // uninitialised pool memory into a constant of some float16 shaders (valgrind: spvtools::EmitNumericLiteral,
  // from a TPoolAllocator allocation in TShader::parse): tri_f16 and diag_f16 came out different when the warm-up
  // ran on the main thread.
  int warmed = -1;
  pthread_t thread;
  if (pthread_create(&thread, NULL, warm_in_thread, &warmed) != 0 || pthread_join(thread, NULL) != 0) warmed = -1;
  if (warmed != 0) {
    fprintf(stderr, "glslc fork server: libshaderc's C API is not in this process\n");
    return 1;
  }
  int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un addr;
  socklen_t len = glslc_socket_address(name, &addr);
  if (listener < 0 || len == 0) return 1;
  if (bind(listener, (struct sockaddr*)&addr, len) != 0 || listen(listener, 64) != 0)
    return errno == EADDRINUSE ? 0 : 1;  // another server won the race: the clients use it
  signal(SIGCHLD, SIG_IGN);  // forks are never waited for: each reports to its client itself
  const char* idle = getenv("LIFELINE_GLSLC_IDLE_S");
  int idle_ms = (idle && atoi(idle) > 0 ? atoi(idle) : 10) * 1000;
  for (;;) {
    struct pollfd p = {listener, POLLIN, 0};
    int ready = poll(&p, 1, idle_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) return 0;  // idle: the build is over
    int conn = accept4(listener, NULL, NULL, SOCK_CLOEXEC);
    if (conn < 0) continue;
    pid_t pid = fork();
    if (pid == 0) {
      close(listener);
      serve_one(conn, envp);
    }
    close(conn);
  }
}

static int replacement_main(int argc, char** argv, char** envp) {
  const char* name = getenv("LIFELINE_GLSLC_SERVE");
  if (!name || !*name) return glslc_main(argc, argv, envp);
  return serve(name, envp);
}

typedef int (*libc_start_main_fn)(main_fn, int, char**, void (*)(void), void (*)(void), void (*)(void), void*);

// glibc's entry into main(): glslc's main is kept and replacement_main is run in its place.
int __libc_start_main(main_fn main, int argc, char** argv, void (*init)(void), void (*fini)(void),
                      void (*rtld_fini)(void), void* stack_end) {
  libc_start_main_fn next = (libc_start_main_fn)dlsym(RTLD_NEXT, "__libc_start_main");
  glslc_main = main;
  return next(replacement_main, argc, argv, init, fini, rtld_fini, stack_end);
}
