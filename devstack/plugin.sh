#!/bin/bash
#
# devstack/plugin.sh - nova-snapshot-ext's devstack plugin
#
# Called by devstack as "source plugin.sh <mode> [phase]" (the plugin.sh
# contract, doc/source/plugins.rst in openstack/devstack):
#
#   stack install      pip install this repository into nova's environment
#   stack post-config  the filter into $NOVA_API_PASTE_INI (by the package's
#                      own "nova-snapshot-ext paste" command) and the
#                      [snapshot_ext] options set in local.conf into
#                      $NOVA_CONF; devstack starts nova-api after this phase
#   stack extra        the upgrade check: stack.sh fails if nova-api's paste
#                      file or the Nova release is refused
#   unstack            the filter out of $NOVA_API_PASTE_INI, our options
#                      (and the [snapshot_ext] section they made) out of
#                      $NOVA_CONF
#   clean              pip uninstall the package from nova's environment
#
# The devstack functions used: is_service_enabled, echo_summary, pip_install,
# pip_uninstall, iniset, inidelete, die. The variables: NOVA_API_PASTE_INI,
# NOVA_CONF, NOVA_BIN_DIR (lib/nova), PROJECT_VENV (stackrc) and those of
# devstack/settings.

# Save trace setting
_XTRACE_NOVA_SNAPSHOT_EXT=$(set +o | grep xtrace)
set +o xtrace

# Options this plugin may write into $NOVA_CONF: "variable section option".
NOVA_SNAPSHOT_EXT_NOVA_OPTIONS=(
    "NOVA_SNAPSHOT_EXT_DRIVER snapshot_ext driver"
    "NOVA_SNAPSHOT_EXT_VOLUME_BACKED_BACKUPS snapshot_ext volume_backed_backups"
)

# nova's environment: lib/nova's PROJECT_VENV["nova"] when devstack runs
# projects in their own virtualenvs (USE_VENV), else the global venv
# (GLOBAL_VENV, $DEVSTACK_VENV) nova runs from. Named explicitly for both
# pip_install and pip_uninstall: devstack's pip_uninstall does not look at
# GLOBAL_VENV.
function _nova_snapshot_ext_venv {
    local venv=""
    if declare -p PROJECT_VENV 2>/dev/null | grep -q '^declare -A'; then
        venv=${PROJECT_VENV["nova"]:-}
    fi
    if [[ -z "$venv" && "${GLOBAL_VENV:-}" == "True" ]]; then
        venv=${DEVSTACK_VENV:-}
    fi
    echo "$venv"
}

function install_nova_snapshot_ext {
    PIP_VIRTUAL_ENV=$(_nova_snapshot_ext_venv) pip_install \
        "$NOVA_SNAPSHOT_EXT_DIR" || \
        die $LINENO "pip install $NOVA_SNAPSHOT_EXT_DIR failed"
}

function configure_nova_snapshot_ext {
    "$NOVA_BIN_DIR/nova-snapshot-ext" paste --from "$NOVA_API_PASTE_INI" \
        --output "$NOVA_API_PASTE_INI" || \
        die $LINENO "nova-snapshot-ext paste refused $NOVA_API_PASTE_INI"
    local entry variable section option
    for entry in "${NOVA_SNAPSHOT_EXT_NOVA_OPTIONS[@]}"; do
        read -r variable section option <<< "$entry"
        if [[ -n "${!variable}" ]]; then
            iniset "$NOVA_CONF" "$section" "$option" "${!variable}"
        fi
    done
}

function check_nova_snapshot_ext {
    # Glance and Keystone checks depend on [snapshot_ext_glance], which
    # this plugin does not set: only the paste file and the Nova release
    # stop the stack.
    local report
    # Its exit status says warning (1) or failure (2) for any check: the
    # JSON names which.
    report=$("$NOVA_BIN_DIR/nova-snapshot-ext-status" --config-file \
        "$NOVA_CONF" --api-paste "$NOVA_API_PASTE_INI" upgrade check \
        --json) || true
    echo "$report"
    "$NOVA_BIN_DIR/python3" - "$report" <<'EOF' || \
        die $LINENO "nova-snapshot-ext: the upgrade check refused nova-api"
import json
import sys

failed = [c["check"] + ": " + str(c["details"])
          for c in json.loads(sys.argv[1])["checks"]
          if c["check"] in ("Paste filter", "Nova release") and c["result"]]
sys.exit("\n".join(failed) or None)
EOF
}

# Remove [section] when no option is left in it, with the blank line
# iniset wrote before it (so nova.conf is again what it was).
function _nova_snapshot_ext_drop_empty_section {
    local file=$1 section=$2
    python3 - "$file" "$section" <<'EOF'
import sys

path, section = sys.argv[1], '[%s]' % sys.argv[2]
with open(path) as f:
    lines = f.readlines()
for i, line in enumerate(lines):
    if line.strip() != section:
        continue
    end = i + 1
    while end < len(lines) and not lines[end].lstrip().startswith('['):
        if lines[end].strip() and not lines[end].lstrip().startswith('#'):
            sys.exit(0)  # an option is left: keep the section
        end += 1
    start = i - 1 if i and not lines[i - 1].strip() else i
    del lines[start:end]
    with open(path, 'w') as f:
        f.writelines(lines)
    break
EOF
}

function unconfigure_nova_snapshot_ext {
    if [[ -f "$NOVA_API_PASTE_INI" && -x "$NOVA_BIN_DIR/nova-snapshot-ext" ]]; then
        "$NOVA_BIN_DIR/nova-snapshot-ext" paste --remove \
            --from "$NOVA_API_PASTE_INI" --output "$NOVA_API_PASTE_INI"
    fi
    if [[ -f "$NOVA_CONF" ]]; then
        local entry variable section option
        for entry in "${NOVA_SNAPSHOT_EXT_NOVA_OPTIONS[@]}"; do
            read -r variable section option <<< "$entry"
            inidelete "$NOVA_CONF" "$section" "$option"
            _nova_snapshot_ext_drop_empty_section "$NOVA_CONF" "$section"
        done
    fi
}

function uninstall_nova_snapshot_ext {
    PIP_VIRTUAL_ENV=$(_nova_snapshot_ext_venv) pip_uninstall nova-snapshot-ext
}

if is_service_enabled nova-snapshot-ext; then
    if [[ "$1" == "stack" && "$2" == "install" ]]; then
        echo_summary "Installing nova-snapshot-ext into nova's environment"
        install_nova_snapshot_ext
    elif [[ "$1" == "stack" && "$2" == "post-config" ]]; then
        echo_summary "Configuring nova-snapshot-ext in nova-api"
        configure_nova_snapshot_ext
    elif [[ "$1" == "stack" && "$2" == "extra" ]]; then
        echo_summary "Checking nova-snapshot-ext in nova-api"
        check_nova_snapshot_ext
    fi
    if [[ "$1" == "unstack" ]]; then
        unconfigure_nova_snapshot_ext
    fi
    if [[ "$1" == "clean" ]]; then
        uninstall_nova_snapshot_ext
    fi
fi

# Restore xtrace
$_XTRACE_NOVA_SNAPSHOT_EXT
