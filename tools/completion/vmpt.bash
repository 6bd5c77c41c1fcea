# bash completion for vmpt: commands, their options, -F fields and --itrace
# letters.  The words come from vmpt itself (--list-cmds, --list-fields,
# COMMAND --help), so they follow the program, not a copy of it.

_vmpt_opts()
{
	"$1" "$2" --help 2>&1 |
		grep -oE '(^|[[:space:],[])--?[a-zA-Z][a-zA-Z0-9-]*' |
		sed 's/^[[:space:],[]*//' | sort -u
}

_vmpt()
{
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
	local vmpt=${COMP_WORDS[0]} cmd=${COMP_WORDS[1]} head sign

	COMPREPLY=()
	if [ "$COMP_CWORD" -eq 1 ]; then
		COMPREPLY=($(compgen -W "$("$vmpt" --list-cmds 2>/dev/null)" -- "$cur"))
		return
	fi
	case $prev in
	-F|--fields)
		# ip,sy<TAB>: complete the name after the last comma; +/- add or drop
		sign=""
		case $cur in [+-]*) sign=${cur:0:1}; cur=${cur:1} ;; esac
		head=""
		case $cur in *,*) head=${cur%,*},; cur=${cur##*,} ;; esac
		COMPREPLY=($(compgen -P "$sign$head" \
			-W "$("$vmpt" --list-fields 2>/dev/null)" -- "$cur"))
		compopt -o nospace 2>/dev/null
		return
		;;
	--sort)
		# vmpt report's keys, after the last comma
		head=""
		case $cur in *,*) head=${cur%,*},; cur=${cur##*,} ;; esac
		COMPREPLY=($(compgen -P "$head" -W "machine comm pid tid dso sym" -- "$cur"))
		compopt -o nospace 2>/dev/null
		return
		;;
	--itrace)
		# perf's letters: one more after what is typed
		COMPREPLY=($(compgen -P "$cur" -W "i b c r x w p e d f m t a g l s q o I E Z" -- ""))
		compopt -o nospace 2>/dev/null
		return
		;;
	esac
	case $cur in
	--itrace=*)
		COMPREPLY=($(compgen -P "$cur" -W "i b c r x w p e d f m t a g l s q o I E Z" -- ""))
		compopt -o nospace 2>/dev/null
		return
		;;
	-*)
		COMPREPLY=($(compgen -W "$(_vmpt_opts "$vmpt" "$cmd")" -- "$cur"))
		return
		;;
	esac
	COMPREPLY=($(compgen -f -- "$cur"))
}

complete -o filenames -F _vmpt vmpt
