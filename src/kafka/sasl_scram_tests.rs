use super::*;

/// RFC 7677 section 3: the SCRAM-SHA-256 example exchange (user "user", password "pencil").
#[test]
fn rfc7677_example_verifies_and_signs() {
    let salt = STANDARD.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
    let c = Credential::derive(Mechanism::Sha256, b"pencil", salt);
    let nonce = "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
    let pending = || Pending {
        gs2_header: "n,,".into(),
        auth_prefix: format!("n=user,r=rOprNGfwEbeRWgbNEkqO,r={nonce},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"),
        nonce: nonce.into(),
        credential: Some(Arc::new(Credential {
            salt: c.salt.clone(),
            stored_key: c.stored_key.clone(),
            server_key: c.server_key.clone(),
        })),
    };
    let mut x = Exchange::new(Mechanism::Sha256);
    let good = format!("c=biws,r={nonce},p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");
    let Ok(Step::Done(last)) = x.last(&good, pending()) else { panic!("the RFC's proof is refused") };
    assert_eq!(last, b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=");
    let wrong = format!("c=biws,r={nonce},p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVM=");
    assert_eq!(x.last(&wrong, pending()).err().unwrap().why, "invalid client credentials");
    let other_nonce = "c=biws,r=rOprNGfwEbeRWgbNEkqOxx,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
    assert!(x.last(other_nonce, pending()).is_err());
}

#[test]
fn client_first_is_parsed_strictly_and_unknown_users_get_a_stable_fake_salt() {
    let cache = Cache::default();
    let first = |t: &str| Exchange::new(Mechanism::Sha512).step(&cache, t.as_bytes(), |_| None);
    let Ok(Step::Continue { token, user }) = first("n,,n=a=3Db=2Cc,r=abc") else { panic!() };
    assert_eq!(user, "a=b,c");
    let Ok(Step::Continue { token: again, .. }) = first("n,,n=a=3Db=2Cc,r=abc") else { panic!() };
    let salt = |t: &[u8]| String::from_utf8_lossy(t).split(',').nth(1).unwrap().to_owned();
    assert_eq!(salt(&token), salt(&again), "an unknown user's salt does not change between attempts");
    assert!(String::from_utf8_lossy(&token).ends_with(",i=4096"));
    for bad in
        ["p=tls,,n=u,r=abc", "n,,n=u", "n,,n=u,r=abc,ext=1", "n,,n=a=4,r=abc", "n,a=v,n=u,r=abc", "", "n,,n=u,r=a,b"]
    {
        assert!(first(bad).is_err(), "{bad}");
    }
    assert!(sasl_name("x=").is_none());
}
