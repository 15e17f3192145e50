#!/usr/bin/perl
# SPDX-License-Identifier: MIT
#
# Perl DBI with DBD::MariaDB, for test/compat/perl.sh: the common steps on a
# handle with the driver's defaults (parameters substituted client-side),
# the ps_* steps on a second handle with mariadb_server_prepare=1
# (COM_STMT_PREPARE/EXECUTE). Prints the "key<TAB>value" lines described in
# test/compat/compat.sh.
use strict;
use warnings;
use utf8;
use DBI;

binmode STDOUT, ':encoding(UTF-8)';
$| = 1;

my $prof = "SELECT variable_value FROM global_variables WHERE variable_name = 'jemalloc-prof_active'";
my $point = 'SELECT variable_value FROM stats_memory_jemalloc WHERE variable_name = ?';
my @echo = ('SELECT ?, ?, ?, ?', 42, 2.5, "it's \\ ü", undef);

sub out { print "$_[0]\t$_[1]\n" }

sub describe {
    my ($h) = @_;
    return ($h->err // '?') . "\t" . ($h->state || '-') . "\t" . ($h->errstr // '');
}

# step KEY HANDLE CODE: CODE returns the value or dies; a DBI error on
# HANDLE is printed as the step's error.
sub step {
    my ($key, $h, $code) = @_;
    my $v = eval { $code->() };
    if ($@) {
        out($key, 'ERROR ' . ($h->err ? describe($h) : $@ =~ s/\s+$//r));
    } else {
        out($key, $v);
    }
}

sub render { defined $_[0] ? $_[0] : 'NULL' }

sub connect_db {
    my ($extra) = @_;
    my $dsn = "DBI:MariaDB:database=$ENV{HC_DB};host=$ENV{HC_HOST};port=$ENV{HC_PORT}"
        . ';mariadb_connect_timeout=10;mariadb_read_timeout=20;mariadb_write_timeout=20'
        . $extra;
    return DBI->connect($dsn, $ENV{HC_USER}, $ENV{HC_PASS},
        { RaiseError => 1, PrintError => 0, AutoCommit => 1 });
}

my $dbh = eval { connect_db('') };
if (!$dbh) {
    out('connect', 'ERROR ' . ($DBI::err ? "$DBI::err\t" . ($DBI::state || '-') . "\t$DBI::errstr" : $@));
    out('done', 'ok');
    exit 0;
}
out('connect', 'ok');

step('stats_allocated', $dbh, sub {
    my $sth = $dbh->prepare('SELECT * FROM stats_memory_jemalloc');
    $sth->execute;
    out('stats_columns', join(',', @{ $sth->{NAME} }));
    my $rows = $sth->fetchall_arrayref;
    out('stats_rows', scalar @$rows);
    out('stats_nonnumeric', scalar grep { !defined $_->[1] || $_->[1] !~ /^[0-9]+$/ } @$rows);
    my ($r) = grep { $_->[0] eq 'allocated' } @$rows;
    return $r ? render($r->[1]) : '(no row)';
});

for my $value (qw(true false)) {
    step("update_$value", $dbh, sub {
        return $dbh->do("UPDATE global_variables SET variable_value = '$value' "
            . "WHERE variable_name = 'jemalloc-prof_active'") + 0;
    });
    step("prof_active_$value", $dbh, sub { render(($dbh->selectrow_array($prof))[0]) });
}

step('error', $dbh, sub {
    eval { $dbh->selectall_arrayref('SELECT * FROM no_such_table') };
    return $dbh->err ? describe($dbh) : 'no error';
});
step('after_error', $dbh, sub { ($dbh->selectrow_array('SELECT 1'))[0] });

step('param_echo', $dbh, sub {
    my ($sql, @args) = @echo;
    return join('|', map { render($_) } $dbh->selectrow_array($sql, undef, @args));
});
step('param_point', $dbh, sub {
    return join('|', map { render(($dbh->selectrow_array($point, undef, $_))[0]) }
        qw(allocated narenas));
});
$dbh->disconnect;

# Server-side prepared statements.
my $ps = eval { connect_db(';mariadb_server_prepare=1') };
if (!$ps) {
    out('ps_connect', 'ERROR ' . ($DBI::errstr // $@));
} else {
    step('ps_echo', $ps, sub {
        my ($sql, @args) = @echo;
        my $sth = $ps->prepare($sql);
        $sth->execute(@args);
        return join('|', map { render($_) } $sth->fetchrow_array);
    });
    step('ps_point', $ps, sub {
        my $sth = $ps->prepare($point);
        my @v;
        for my $name (qw(allocated narenas)) {
            $sth->execute($name);
            push @v, render(($sth->fetchrow_array)[0]);
            $sth->finish;
        }
        return join('|', @v);
    });
    step('ps_update', $ps, sub {
        my $upd = $ps->prepare('UPDATE global_variables SET variable_value = ? WHERE variable_name = ?');
        my $sel = $ps->prepare('SELECT variable_value FROM global_variables WHERE variable_name = ?');
        my @v;
        for my $value (qw(true false)) {
            push @v, $upd->execute($value, 'jemalloc-prof_active') + 0;
            $sel->execute('jemalloc-prof_active');
            push @v, render(($sel->fetchrow_array)[0]);
            $sel->finish;
        }
        return join('|', @v);
    });
    step('ps_error', $ps, sub {
        eval { $ps->prepare('SELECT * FROM no_such_table') };
        return $ps->err ? describe($ps) : 'no error';
    });
    $ps->disconnect;
}
out('done', 'ok');
