# Throwaway database servers for tests and benchmarks: sourced, not run.
#
#   . scripts/lib/servers.sh
#   trap stop_servers EXIT          # one trap stops whatever was started, also on failure
#   ensure_redis_installed; start_redis        # exports HOARD_REDIS_URL
#   start_redis_cluster                        # exports HOARD_REDIS_CLUSTER_URL
#   ensure_postgres_installed; start_postgres  # exports HOARD_POSTGRES_URL
#
# Each server runs on a free loopback port with its files in a temporary
# directory, and is stopped by its PID (never by name). start_* return non-zero,
# with the server's log on stderr, when the server does not come up.
# Sets: REDIS_PORT, POSTGRES_PORT, POSTGRES_BIN (the PostgreSQL 15 bin directory),
# POSTGRES_AS (the command prefix that runs a PostgreSQL program as a non-root user).

REDIS_PID=""
REDIS_DIR=""
REDIS_CLUSTER_PIDS=()
REDIS_CLUSTER_PORTS=()
REDIS_CLUSTER_DIR=""
POSTGRES_RUNNER_PID=""
POSTGRES_PID=""
POSTGRES_DIR=""
POSTGRES_BIN="${POSTGRES_BIN:-/usr/lib/postgresql/15/bin}"
POSTGRES_AS=()

servers_log() { printf '\n==> %s\n' "$*"; }

# Installs Debian packages with apt-get (through sudo when not root).
install_packages() {
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    servers_log "installing $*"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@"
}

ensure_redis_installed() {
    command -v redis-server >/dev/null 2>&1 && return 0
    [ "$(uname -s)" = "Linux" ] && install_packages redis-server
}

ensure_postgres_installed() {
    [ -x "$POSTGRES_BIN/initdb" ] && return 0
    [ "$(uname -s)" = "Linux" ] && install_packages postgresql
}

# A port in 20000..59999; callers retry when it turns out to be taken.
random_port() { echo $((20000 + RANDOM % 40000)); }

# Starts redis-server without persistence and waits until it answers PING.
start_redis() {
    REDIS_DIR="$(mktemp -d)"
    local attempt port
    for attempt in 1 2 3 4 5 6 7 8 9 10; do
        port="$(random_port)"
        redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
            --dir "$REDIS_DIR" >"$REDIS_DIR/redis.log" 2>&1 &
        REDIS_PID=$!
        for _ in $(seq 1 100); do
            kill -0 "$REDIS_PID" 2>/dev/null || break
            if [ "$(redis-cli -p "$port" ping 2>/dev/null)" = "PONG" ]; then
                REDIS_PORT="$port"
                export HOARD_REDIS_URL="redis://127.0.0.1:$port/0"
                servers_log "redis-server (pid $REDIS_PID) answers on 127.0.0.1:$port"
                return 0
            fi
            sleep 0.1
        done
        kill "$REDIS_PID" 2>/dev/null || true
        wait "$REDIS_PID" 2>/dev/null || true
        REDIS_PID=""
    done
    cat "$REDIS_DIR/redis.log" >&2 || true
    echo "could not start redis-server" >&2
    return 1
}

stop_redis() {
    if [ -n "$REDIS_PID" ]; then
        kill "$REDIS_PID" 2>/dev/null || true
        wait "$REDIS_PID" 2>/dev/null || true
        REDIS_PID=""
    fi
    if [ -n "$REDIS_DIR" ]; then rm -rf "$REDIS_DIR"; REDIS_DIR=""; fi
}

# Starts a Redis Cluster on loopback: three primaries and three replicas (one per
# primary), each a redis-server without persistence on a port of its own, joined
# with `redis-cli --cluster create`, and waits until every node says
# cluster_state:ok and every replica has synchronised with its primary. Exports HOARD_REDIS_CLUSTER_URL
# (redis+cluster://127.0.0.1:p1,127.0.0.1:p2,...) and HOARD_REDIS_CLUSTER_PIDS
# ("port:pid port:pid ...", so tests can stop one node by its PID).
start_redis_cluster() {
    REDIS_CLUSTER_DIR="$(mktemp -d)"
    # Six consecutive ports, and each port + 10000 for the cluster bus, all free.
    local base attempt i port pid ready
    for attempt in 1 2 3 4 5 6 7 8 9 10; do
        base=$((20000 + RANDOM % 30000))
        REDIS_CLUSTER_PIDS=()
        REDIS_CLUSTER_PORTS=()
        for i in 0 1 2 3 4 5; do
            port=$((base + i))
            mkdir -p "$REDIS_CLUSTER_DIR/$port"
            redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --daemonize no \
                --cluster-enabled yes --cluster-config-file "$REDIS_CLUSTER_DIR/$port/nodes.conf" \
                --cluster-node-timeout 2000 --repl-diskless-sync-delay 0 --dir "$REDIS_CLUSTER_DIR/$port" \
                >"$REDIS_CLUSTER_DIR/$port/redis.log" 2>&1 &
            REDIS_CLUSTER_PIDS+=($!)
            REDIS_CLUSTER_PORTS+=("$port")
        done
        ready=1
        for i in 0 1 2 3 4 5; do
            port="${REDIS_CLUSTER_PORTS[$i]}"
            pid="${REDIS_CLUSTER_PIDS[$i]}"
            for _ in $(seq 1 100); do
                kill -0 "$pid" 2>/dev/null || break
                [ "$(redis-cli -p "$port" ping 2>/dev/null)" = "PONG" ] && break
                sleep 0.1
            done
            [ "$(redis-cli -p "$port" ping 2>/dev/null)" = "PONG" ] || ready=0
        done
        [ "$ready" = 1 ] && break
        stop_redis_cluster_nodes
    done
    if [ "${#REDIS_CLUSTER_PIDS[@]}" -eq 0 ]; then
        echo "could not start six redis-server cluster nodes" >&2
        return 1
    fi
    local addresses=()
    for port in "${REDIS_CLUSTER_PORTS[@]}"; do addresses+=("127.0.0.1:$port"); done
    if ! redis-cli --cluster create "${addresses[@]}" --cluster-replicas 1 --cluster-yes \
        >"$REDIS_CLUSTER_DIR/create.log" 2>&1; then
        cat "$REDIS_CLUSTER_DIR/create.log" >&2
        echo "redis-cli --cluster create failed" >&2
        return 1
    fi
    # Ready once every node says cluster_state:ok and every replica has synchronised
    # with its primary (a replica that never did cannot take over from it).
    for _ in $(seq 1 600); do
        ready=1
        for port in "${REDIS_CLUSTER_PORTS[@]}"; do
            redis-cli -p "$port" cluster info 2>/dev/null | grep -q "cluster_state:ok" || { ready=0; break; }
            if redis-cli -p "$port" info replication 2>/dev/null | grep -q "role:slave"; then
                redis-cli -p "$port" info replication | grep -q "master_link_status:up" || { ready=0; break; }
            fi
        done
        [ "$ready" = 1 ] && break
        sleep 0.1
    done
    if [ "$ready" != 1 ]; then
        cat "$REDIS_CLUSTER_DIR/create.log" >&2
        echo "the Redis cluster did not reach cluster_state:ok within a minute" >&2
        return 1
    fi
    local joined pids=()
    joined="$(IFS=,; echo "${addresses[*]}")"
    for i in 0 1 2 3 4 5; do pids+=("${REDIS_CLUSTER_PORTS[$i]}:${REDIS_CLUSTER_PIDS[$i]}"); done
    export HOARD_REDIS_CLUSTER_URL="redis+cluster://$joined"
    export HOARD_REDIS_CLUSTER_PIDS="${pids[*]}"
    servers_log "Redis cluster (3 primaries, 3 replicas, pids ${REDIS_CLUSTER_PIDS[*]}) answers on $joined"
}

stop_redis_cluster_nodes() {
    local pid
    for pid in "${REDIS_CLUSTER_PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${REDIS_CLUSTER_PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    REDIS_CLUSTER_PIDS=()
    REDIS_CLUSTER_PORTS=()
}

stop_redis_cluster() {
    stop_redis_cluster_nodes
    if [ -n "$REDIS_CLUSTER_DIR" ]; then rm -rf "$REDIS_CLUSTER_DIR"; REDIS_CLUSTER_DIR=""; fi
}

# Creates a PostgreSQL 15 cluster (trust authentication, loopback only) in a
# temporary directory, starts it, and waits until it accepts connections. As root
# it runs the server as the postgres user (PostgreSQL refuses to run as root).
start_postgres() {
    POSTGRES_DIR="$(mktemp -d)"
    if [ "$(id -u)" -eq 0 ]; then
        chown postgres "$POSTGRES_DIR"
        POSTGRES_AS=(runuser -u postgres --)
    fi
    if ! "${POSTGRES_AS[@]}" "$POSTGRES_BIN/initdb" -D "$POSTGRES_DIR/data" -U postgres -E UTF8 \
        --auth=trust --no-sync >"$POSTGRES_DIR/initdb.log" 2>&1; then
        cat "$POSTGRES_DIR/initdb.log" >&2
        echo "initdb failed" >&2
        return 1
    fi
    local attempt port
    for attempt in 1 2 3 4 5 6 7 8 9 10; do
        port="$(random_port)"
        "${POSTGRES_AS[@]}" "$POSTGRES_BIN/postgres" -D "$POSTGRES_DIR/data" -p "$port" \
            -c listen_addresses=127.0.0.1 -c unix_socket_directories="$POSTGRES_DIR" \
            -c fsync=off -c full_page_writes=off -c max_connections=200 \
            >"$POSTGRES_DIR/postgres.log" 2>&1 &
        POSTGRES_RUNNER_PID=$!
        for _ in $(seq 1 150); do
            kill -0 "$POSTGRES_RUNNER_PID" 2>/dev/null || break
            if "$POSTGRES_BIN/pg_isready" -q -h 127.0.0.1 -p "$port" -U postgres; then
                # The postmaster's own PID (the runner may be runuser).
                POSTGRES_PID="$(head -n 1 "$POSTGRES_DIR/data/postmaster.pid")"
                POSTGRES_PORT="$port"
                export HOARD_POSTGRES_URL="postgres://postgres@127.0.0.1:$port/postgres"
                servers_log "PostgreSQL (pid $POSTGRES_PID) answers on 127.0.0.1:$port"
                return 0
            fi
            sleep 0.1
        done
        kill "$POSTGRES_RUNNER_PID" 2>/dev/null || true
        wait "$POSTGRES_RUNNER_PID" 2>/dev/null || true
        POSTGRES_RUNNER_PID=""
    done
    cat "$POSTGRES_DIR/postgres.log" >&2 || true
    echo "could not start PostgreSQL" >&2
    return 1
}

# Fast shutdown (SIGINT: sessions are ended, nothing is kept) of the postmaster.
stop_postgres() {
    if [ -n "$POSTGRES_PID" ]; then
        kill -INT "$POSTGRES_PID" 2>/dev/null || true
        POSTGRES_PID=""
    elif [ -n "$POSTGRES_RUNNER_PID" ]; then
        kill -INT "$POSTGRES_RUNNER_PID" 2>/dev/null || true
    fi
    if [ -n "$POSTGRES_RUNNER_PID" ]; then
        wait "$POSTGRES_RUNNER_PID" 2>/dev/null || true
        POSTGRES_RUNNER_PID=""
    fi
    if [ -n "$POSTGRES_DIR" ]; then rm -rf "$POSTGRES_DIR"; POSTGRES_DIR=""; fi
}

# Stops every server started here; safe to call more than once.
stop_servers() {
    stop_redis
    stop_redis_cluster
    stop_postgres
}
