#!/bin/bash
# devstack's functions that devstack/plugin.sh calls, for running its
# phases on the cloud in a box (tests/cloud/test_deploy.py).
#
# Our own code, written to behave as devstack defines these functions
# (openstack/devstack: functions-common for is_service_enabled,
# enable_service, echo_summary, die, define_plugin; inc/python for
# pip_install, pip_uninstall; inc/ini-config for iniset, inidelete):
#
# * pip_install / pip_uninstall pick the pip of $PIP_VIRTUAL_ENV, else of
#   $DEVSTACK_VENV when GLOBAL_VENV=True (devstack's choice in that order);
#   unlike devstack, no upper-constraints file is added (there is no
#   openstack/requirements checkout here) and there is no system-pip
#   fallback: the shim fails instead of touching this machine's Python.
# * iniset appends a missing section at the end, after one blank line,
#   then puts "option = value" right after the section's header; an
#   option already there has its value replaced in place.
# * inidelete removes "option =" lines inside the section only.
#
# Sourced before devstack/settings and devstack/plugin.sh; the caller sets
# ENABLED_SERVICES, NOVA_API_PASTE_INI, NOVA_CONF, NOVA_BIN_DIR,
# GLOBAL_VENV, DEVSTACK_VENV and NOVA_SNAPSHOT_EXT_DIR.

set -o errexit
set -o nounset

ENABLED_SERVICES=${ENABLED_SERVICES:-}

function define_plugin {
    # devstack records the name for plugin_requires; nothing here reads it.
    : "$1"
}

function enable_service {
    local service
    for service in "$@"; do
        if ! is_service_enabled "$service"; then
            ENABLED_SERVICES=${ENABLED_SERVICES:+$ENABLED_SERVICES,}$service
        fi
    done
}

function is_service_enabled {
    local service
    for service in "$@"; do
        if [[ ",$ENABLED_SERVICES," == *",$service,"* ]]; then
            return 0
        fi
    done
    return 1
}

function echo_summary {
    echo "summary: $*"
}

function die {
    local line=$1
    shift
    echo "[ERROR] plugin.sh:$line $*" >&2
    exit 1
}

function _shim_pip {
    if [[ -n "${PIP_VIRTUAL_ENV:-}" && -d "${PIP_VIRTUAL_ENV}" ]]; then
        echo "$PIP_VIRTUAL_ENV/bin/pip"
    elif [[ "${GLOBAL_VENV:-}" == "True" && -d "${DEVSTACK_VENV:-}" ]]; then
        echo "$DEVSTACK_VENV/bin/pip"
    else
        echo "shim: no PIP_VIRTUAL_ENV or DEVSTACK_VENV to install into" >&2
        return 1
    fi
}

function pip_install {
    local pip
    pip=$(_shim_pip)
    PIP_DISABLE_PIP_VERSION_CHECK=1 "$pip" install "$@"
}

function pip_uninstall {
    local pip
    pip=$(_shim_pip)
    "$pip" uninstall -y "$1" || /bin/true
}

function iniset {
    local file=$1 section=$2 option=$3 value=$4
    if ! grep -q "^\[$section\]" "$file" 2>/dev/null; then
        printf '\n[%s]\n' "$section" >> "$file"
    fi
    if sed -n "/^\[$section\]/,/^\[.*\]/p" "$file" | \
            grep -q "^${option}[ \t]*="; then
        sed -i -e "/^\[$section\]/,/^\[.*\]/ s|^\(${option}[ \t]*=[ \t]*\).*$|\1$value|" "$file"
    else
        sed -i -e "/^\[$section\]/ a\\
$option = $value
" "$file"
    fi
}

function inidelete {
    local file=$1 section=$2 option=$3
    sed -i -e "/^\[$section\]/,/^\[.*\]/ { /^${option}[ \t]*=/ d; }" "$file"
}
