/**
 * @module sd_notify without libsystemd: a datagram to $NOTIFY_SOCKET through libc's
 * socket(2)/sendto(2), called with koffi (Node and Bun have no AF_UNIX datagram
 * sockets). Used for systemd's Type=notify (READY=1, STOPPING=1, STATUS=...). Also a
 * non-blocking receiver, which tests use to play systemd's part.
 */
import { loadLibrary, type KoffiFunc, type KoffiLibrary } from "../load.ts";
import { NativeError } from "../errors.ts";

const AF_UNIX = 1;
const SOCK_DGRAM = 2;
const SOCK_CLOEXEC = 0o2000000;
const MSG_DONTWAIT = 0x40;
const MSG_NOSIGNAL = 0x4000;
const SUN_PATH_MAX = 108;

interface Libc {
  lib: KoffiLibrary;
  socket: KoffiFunc<(domain: number, type: number, protocol: number) => number>;
  sendto: KoffiFunc<(fd: number, buf: Buffer, len: number, flags: number, addr: Buffer, addrlen: number) => number>;
  bind: KoffiFunc<(fd: number, addr: Buffer, addrlen: number) => number>;
  recv: KoffiFunc<(fd: number, buf: Buffer, len: number, flags: number) => number>;
  close: KoffiFunc<(fd: number) => number>;
}

let libc: Libc | undefined;

function load(): Libc {
  if (libc) return libc;
  const { lib } = loadLibrary("the C library", ["libc.so.6"]);
  libc = {
    lib,
    socket: lib.func("int socket(int domain, int type, int protocol)"),
    sendto: lib.func("long sendto(int fd, const void *buf, size_t len, int flags, const void *addr, uint32_t addrlen)"),
    bind: lib.func("int bind(int fd, const void *addr, uint32_t addrlen)"),
    recv: lib.func("long recv(int fd, void *buf, size_t len, int flags)"),
    close: lib.func("int close(int fd)"),
  } as Libc;
  return libc;
}

/** struct sockaddr_un for `path`; a leading '@' names an abstract socket (leading NUL). */
function sockaddrUn(path: string): { addr: Buffer; len: number } {
  const name = Buffer.from(path.startsWith("@") ? `\0${path.slice(1)}` : path);
  if (name.length >= SUN_PATH_MAX) throw new NativeError("INVALID_ARG", "libc", `socket path is too long for sockaddr_un: ${path}`);
  const addr = Buffer.alloc(2 + SUN_PATH_MAX);
  addr.writeUInt16LE(AF_UNIX, 0);
  name.copy(addr, 2);
  // Abstract names are exactly their bytes; filesystem paths include the terminating NUL.
  return { addr, len: 2 + name.length + (path.startsWith("@") ? 0 : 1) };
}

/**
 * Sends `state` (e.g. "READY=1") to the service manager when $NOTIFY_SOCKET is set.
 * Returns false when not running under a notify-type service; throws on a real failure.
 */
export function sdNotify(state: string, socketPath = process.env.NOTIFY_SOCKET): boolean {
  if (!socketPath) return false;
  const c = load();
  const fd = c.socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw new NativeError("INTERNAL", "libc", "sd_notify: socket(AF_UNIX, SOCK_DGRAM) failed", { call: "socket" });
  try {
    const { addr, len } = sockaddrUn(socketPath);
    const msg = Buffer.from(state);
    const sent = Number(c.sendto(fd, msg, msg.length, MSG_NOSIGNAL, addr, len));
    if (sent !== msg.length) throw new NativeError("INTERNAL", "libc", `sd_notify: sendto ${socketPath} failed`, { call: "sendto" });
    return true;
  } finally {
    c.close(fd);
  }
}

/** A bound datagram socket that collects messages without blocking (systemd's side, for tests). */
export class NotifyReceiver {
  readonly path: string;
  #fd: number;

  constructor(path: string) {
    const c = load();
    this.path = path;
    this.#fd = c.socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (this.#fd < 0) throw new NativeError("INTERNAL", "libc", "socket(AF_UNIX, SOCK_DGRAM) failed", { call: "socket" });
    const { addr, len } = sockaddrUn(path);
    if (c.bind(this.#fd, addr, len) !== 0) {
      c.close(this.#fd);
      throw new NativeError("INTERNAL", "libc", `bind ${path} failed`, { call: "bind" });
    }
  }

  /** Every datagram waiting now, oldest first. */
  drain(): string[] {
    const out: string[] = [];
    const buf = Buffer.alloc(4096);
    for (;;) {
      const n = Number(load().recv(this.#fd, buf, buf.length, MSG_DONTWAIT));
      if (n < 0) break;
      out.push(buf.subarray(0, n).toString());
    }
    return out;
  }

  close(): void {
    if (this.#fd >= 0) load().close(this.#fd);
    this.#fd = -1;
  }
}
