#!/usr/bin/env bash
# A real registry for the vgpu_manager_image tests: Debian's docker-registry (distribution v2) on 127.0.0.1
# with htpasswd auth and TLS from a throw-away CA.
#
#   registry.sh start DIR   CA + server cert (SAN 127.0.0.1, localhost) signed by it, htpasswd with a random
#                           password, a free port; writes DIR/env (REGISTRY, REGISTRY_USER, REGISTRY_PASSWORD_FILE,
#                           REGISTRY_CA) and waits until /v2/ answers 401 over verified TLS
#   registry.sh stop DIR    stops that registry (by the pid it recorded) and removes DIR
set -euo pipefail
cmd=${1:?usage: registry.sh start|stop DIR}
dir=${2:?usage: registry.sh start|stop DIR}

stop() {
  if [ -f "$dir/pid" ]; then
    pid=$(cat "$dir/pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
  fi
  rm -rf "$dir"
}

start() {
  mkdir -p "$dir/data"
  chmod 0700 "$dir"
  cd "$dir"
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=gpuvirt test registry CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -keyout ca.key -out ca.crt 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout server.key -out server.csr 2>/dev/null
  printf '%s\n' "subjectAltName=IP:127.0.0.1,DNS:localhost" "basicConstraints=CA:FALSE" \
    "keyUsage=critical,digitalSignature,keyEncipherment" "extendedKeyUsage=serverAuth" > server.ext
  openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile server.ext \
    -out server.crt 2>/dev/null
  user=builder
  (umask 077; openssl rand -hex 16 > "$dir/secret")
  # -i: the password comes on stdin, never on a command line
  htpasswd -niB "$user" < "$dir/secret" > "$dir/users.htpasswd" 2>/dev/null
  port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  cat > config.yml <<YAML
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $dir/data
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$port
  secret: $(openssl rand -hex 16)
  tls:
    certificate: $dir/server.crt
    key: $dir/server.key
auth:
  htpasswd:
    realm: gpuvirt-test
    path: $dir/users.htpasswd
YAML
  setsid docker-registry serve "$dir/config.yml" > "$dir/registry.log" 2>&1 < /dev/null &
  echo $! > "$dir/pid"
  code=000
  for _ in $(seq 100); do
    code=$(curl -s -o /dev/null -w '%{http_code}' --cacert "$dir/ca.crt" "https://127.0.0.1:$port/v2/" || true)
    [ "$code" = 401 ] && break
    sleep 0.1
  done
  if [ "$code" != 401 ]; then
    echo "registry did not come up on 127.0.0.1:$port (last HTTP code $code):" >&2
    cat "$dir/registry.log" >&2
    stop
    exit 1
  fi
  printf 'REGISTRY=127.0.0.1:%s\nREGISTRY_USER=%s\nREGISTRY_PASSWORD_FILE=%s\nREGISTRY_CA=%s\n' \
    "$port" "$user" "$dir/secret" "$dir/ca.crt" > "$dir/env"
  echo "registry on https://127.0.0.1:$port (pid $(cat "$dir/pid"))"
}

case "$cmd" in
  start) start ;;
  stop) stop ;;
  *) echo "usage: registry.sh start|stop DIR" >&2; exit 2 ;;
esac
